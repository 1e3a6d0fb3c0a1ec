package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// An eval file's stubs (the file's and a case's), a replay and a called
// check's result read as the API takes them; a misspelt stub field is
// refused.
func TestReadEvalFileStubs(t *testing.T) {
	const file = `name: orders
stubs:
  charge_card:
    - result: {id: ch_1}
cases:
  - name: refund
    message: Refund order 42.
    stubs:
      send_email:
        - match: {to: ana@example.com}
          sequence: [{result: {id: m_1}}, {error: mailbox full}]
        - error: unknown address
    replay:
      - text: Refunding.
        calls: [{tool: send_email, input: {to: ana@example.com}}]
      - text: Done.
    checks:
      - called: send_email
        args: {to: ana@example.com}
        result: {id: m_1}
`
	req, err := readEvalFile("-", strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(req)
	want := `{"name":"orders","cases":[{"name":"refund","message":"Refund order 42.",` +
		`"checks":[{"called":"send_email","args":{"to":"ana@example.com"},"result":{"id":"m_1"}}],` +
		`"stubs":{"send_email":[{"match":{"to":"ana@example.com"},"sequence":[{"result":{"id":"m_1"}},{"error":"mailbox full"}]},{"error":"unknown address"}]},` +
		`"replay":[{"text":"Refunding.","calls":[{"tool":"send_email","input":{"to":"ana@example.com"}}]},{"text":"Done."}]}],` +
		`"stubs":{"charge_card":[{"result":{"id":"ch_1"}}]}}`
	if string(got) != want {
		t.Errorf("read:\n%s\nwant:\n%s", got, want)
	}
	_, err = readEvalFile("-", strings.NewReader("cases:\n  - message: x\n    stubs:\n      send_email:\n        - reslt: 1\n"))
	if err == nil || !strings.Contains(err.Error(), "field reslt not found") {
		t.Errorf("a misspelt stub field: %v", err)
	}
}
