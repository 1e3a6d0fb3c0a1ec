package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// reservation is a usage reservation (store.ReserveUsageParams).
type reservation struct {
	sessionID, turnID, principal string
	amount                       store.Spend
	expires                      time.Time
}

// eachCall calls fn with every model call's usage; the caller holds m.mu.
func (m *memStore) eachCall(fn func(store.UsageRow)) {
	for _, s := range m.sessions {
		for _, c := range s.calls {
			fn(c)
		}
	}
}

func (f usageFilter) matches(c store.UsageRow) bool {
	return (f.SessionID == "" || c.SessionID == f.SessionID) && (f.TurnID == "" || c.TurnID == f.TurnID) &&
		(f.Principal == "" || c.Principal == f.Principal) && (f.Since.IsZero() || !c.At.Before(micro(f.Since)))
}

type usageFilter store.UsageFilter

func (m *memStore) UsageTotals(ctx context.Context, f store.UsageFilter) (api.Usage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	total := store.NoUsage()
	m.eachCall(func(c store.UsageRow) {
		if usageFilter(f).matches(c) {
			store.SumUsage(&total, c.Usage)
		}
	})
	return total, nil
}

func (m *memStore) UsageReport(ctx context.Context, p store.UsageReportParams) ([]store.UsageGroup, error) {
	key := map[store.UsageGrouping]func(store.UsageRow) string{
		store.UsageByPrincipal: func(c store.UsageRow) string { return c.Principal },
		store.UsageByChannel:   func(c store.UsageRow) string { return c.Channel },
		store.UsageByModel:     func(c store.UsageRow) string { return c.Model },
		store.UsageBySession:   func(c store.UsageRow) string { return c.SessionID },
		store.UsageTotal:       func(store.UsageRow) string { return "" },
	}[p.By]
	if key == nil {
		return nil, fmt.Errorf("a usage report by %q: by principal, channel, model or session", p.By)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	groups := map[string]*api.Usage{}
	from, to := micro(p.From), micro(p.To)
	m.eachCall(func(c store.UsageRow) {
		if c.At.Before(from) || !c.At.Before(to) || (p.Principal != "" && c.Principal != p.Principal) ||
			(len(p.Sessions) > 0 && !slices.Contains(p.Sessions, c.SessionID)) {
			return
		}
		g := groups[key(c)]
		if g == nil {
			g = &api.Usage{}
			groups[key(c)] = g
		}
		store.SumUsage(g, c.Usage)
	})
	out := make([]store.UsageGroup, 0, len(groups))
	for k, u := range groups {
		out = append(out, store.UsageGroup{Key: k, Usage: *u})
	}
	store.SortUsageGroups(out)
	return out, nil
}

func (m *memStore) ReserveUsage(ctx context.Context, p store.ReserveUsageParams) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	delete(m.reservations, p.ID) // a reservation replaces one of the same id
	var spent store.Spent
	add := func(c store.UsageRow) {
		s := store.SpendOf(c.Usage)
		if c.SessionID == p.SessionID {
			spent.Session = spent.Session.Add(s)
			if c.TurnID == p.TurnID {
				spent.Turn = spent.Turn.Add(s)
			}
		}
		if c.Principal == p.Principal && (p.Since.IsZero() || !c.At.Before(micro(p.Since))) {
			spent.Principal = spent.Principal.Add(s)
		}
	}
	m.eachCall(add)
	for id, r := range m.reservations {
		if !r.expires.After(now) {
			delete(m.reservations, id)
			continue
		}
		if r.sessionID == p.SessionID {
			spent.Session = spent.Session.Add(r.amount)
			if r.turnID == p.TurnID {
				spent.Turn = spent.Turn.Add(r.amount)
			}
		}
		if r.principal == p.Principal {
			spent.Principal = spent.Principal.Add(r.amount)
		}
	}
	if p.Admit != nil {
		if err := p.Admit(spent); err != nil {
			return err
		}
	}
	m.reservations[p.ID] = reservation{sessionID: p.SessionID, turnID: p.TurnID, principal: p.Principal, amount: p.Amount, expires: micro(p.Expires)}
	return nil
}

func (m *memStore) ReleaseUsage(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.reservations, id)
	return nil
}
