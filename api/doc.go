// Package api is the one definition of what crosses a boundary of an agent
// host: the event kinds of a session's stream and a payload type for each,
// the sessions, turns and approvals the store keeps and the HTTP API
// returns, the request and response bodies of every endpoint, the routes
// themselves, and the error codes with their HTTP statuses.
//
// Everything that writes or reads these — the host, the store, the HTTP
// server, the typed client in package client, the CLI and the OpenAPI
// document — uses the types here, so that renaming a field is a compile
// error rather than a stream that no longer resumes after a restart.
//
// Events are written and read through the same type:
//
//	e := api.NewEvent(api.Message{Role: api.RoleUser, Text: "hello"})
//	…
//	m, err := api.Decode[api.Message](e)
//
// Errors carry a [Code]; [Code.Status] is the HTTP status, from one table:
//
//	return api.Errorf(api.CodeSessionBusy, "another turn is running in %s", id)
//	…
//	if errors.Is(err, api.ErrSessionBusy) { … }
//
// The JSON field order of the bodies and payloads is the order the HTTP API
// has always written; some structs list their fields alphabetically for
// that reason.
package api
