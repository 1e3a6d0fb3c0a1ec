package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// nudges is call.Host.SlackNudges: a question's key is claimed in the
// store (a KV entry written only if absent, expiring with the window)
// before it is posted, so that of hosts asking at once one posts.
type nudges struct {
	h     *Host
	slack *slack.Client
}

// nudgesNamespace holds the keys asked, per agent.
func (h *Host) nudgesNamespace() string { return h.opts.Namespace + ".slack-nudges" }

func (n nudges) Ask(ctx context.Context, key, channelOrUser, text string, window time.Duration) (bool, error) {
	switch err := tool.CheckKey(key); {
	case err != nil:
		return false, fmt.Errorf("slack nudges: %w", err)
	case window <= 0:
		return false, errors.New("slack nudges: the window must be positive")
	case strings.TrimSpace(channelOrUser) == "" || strings.TrimSpace(text) == "":
		return false, errors.New("slack nudges: a channel (or user) and a text are required")
	}
	absent := int64(0)
	_, err := n.h.log.KVSet(ctx, store.KVSetParams{Namespace: n.h.nudgesNamespace(), Key: key,
		Value: []byte(channelOrUser), TTL: window, IfVersion: &absent})
	if errors.Is(err, store.ErrConflict) {
		return false, nil // asked within the window, here or on another host
	}
	if err != nil {
		return false, fmt.Errorf("slack nudges: claiming %q: %w", key, err)
	}
	if _, _, err := n.slack.PostMessageContext(ctx, channelOrUser, slack.MsgOptionText(text, false)); err != nil {
		// Not asked: free the key for the next try.
		if derr := n.h.log.KVDelete(context.WithoutCancel(ctx), n.h.nudgesNamespace(), key); derr != nil {
			n.h.logger.Warn("freeing a nudge's key", "key", key, "err", derr)
		}
		return false, fmt.Errorf("slack nudges: posting %q: %w", key, err)
	}
	return true, nil
}
