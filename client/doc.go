// Package client is a typed Go client of an agent host's HTTP API: the API
// that [github.com/agentsdk/agentsdk/serve] serves and the agent-sdk CLI's
// --url mode uses, the way caddy's CLI talks to its admin API. Requests and
// answers are the types of package [github.com/agentsdk/agentsdk/api]; the
// paths are those of [api.Routes].
//
//	c, err := client.New("http://127.0.0.1:3000/myagent", os.Getenv("AGENT_SDK_TOKEN"), nil)
//	…
//	out, err := c.CallTool(ctx, "hello", map[string]string{"name": "Ada"}, nil)
//	var pending *client.PendingError
//	switch {
//	case errors.As(err, &pending): // the tool needs approval for this input
//		done, err := c.WaitCall(ctx, pending.CallID, 0)
//		…
//	case errors.Is(err, api.ErrSessionBusy):
//		…
//	}
//
// A model turn, followed as it runs:
//
//	turn, err := c.CreateSession(ctx, api.CreateSessionRequest{Message: "Inspect PR 42"})
//	for e, err := range c.Events(ctx, turn.SessionID, 0) {
//		if err != nil {
//			return err
//		}
//		if e.Kind == api.KindMessage {
//			m, _ := api.Decode[api.Message](e)
//			fmt.Println(m.Role+":", m.Text)
//		}
//		if e.Kind == api.KindTurnCompleted && e.TurnID == turn.TurnID {
//			break
//		}
//	}
//
// Error answers are [*StatusError]s, which unwrap to the API's [*api.Error]:
// errors.Is(err, api.ErrSessionNotFound) holds for a 404 session_not_found.
// Errors reaching the host are net/http's *url.Error, as they are.
package client
