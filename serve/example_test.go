package serve_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

// A program of its own, without the agent-sdk CLI: a tool set handed to a
// host, put on HTTP by a Server. In production, serve.ListenAndServe(ctx,
// "127.0.0.1:3000", srv, nil) runs it and drains in-flight calls at shutdown.
func Example() {
	type GreetInput struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	greet, err := tool.New("greet", tool.Config{Description: "Greet someone."},
		func(ctx context.Context, call *tool.Call, in GreetInput) (any, error) {
			return "Hello, " + in.Name + "!", nil
		})
	if err != nil {
		log.Fatal(err)
	}
	set, err := tool.NewSet(greet)
	if err != nil {
		log.Fatal(err)
	}
	state, _ := os.MkdirTemp("", "state")
	defer os.RemoveAll(state)
	h, err := host.New(set, &host.Options{StateRoot: state})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := serve.New(h, &serve.Options{Slug: "myagent", Token: "secret"})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	req, _ := http.NewRequest("POST", ts.URL+"/myagent/v1/tools/greet", strings.NewReader(`{"input":{"name":"Ada"}}`))
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status)
	fmt.Println(strings.Contains(string(body), `"result":"Hello, Ada!"`))
	// Output:
	// 200 OK
	// true
}
