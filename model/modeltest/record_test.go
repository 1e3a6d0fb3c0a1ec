package modeltest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/modeltest"
)

// A request asked again gets the answers recorded for it in order, a
// failure included, and the last one again; a call's input that is not
// JSON and reasoning come back as they were; the prompt-cache key and
// JSON's spacing change no key.
func TestRecordReplayAnswers(t *testing.T) {
	dir := t.TempDir()
	limited := &model.Error{Reason: model.ReasonRateLimited, Status: 429, RetryAfter: 2 * time.Second, Message: "slow down"}
	src := modeltest.New(
		modeltest.Fail(limited),
		modeltest.Answer{Reasoning: []model.Reasoning{{Text: "Think.\nHard.", Signature: "sig"}}, Text: "Calling.",
			ToolCalls: []model.ToolCall{{ID: "c1", Name: "weather", Input: []byte(`{"city": `)}}},
	)
	rec, err := modeltest.Record(src, dir)
	if err != nil {
		t.Fatal(err)
	}
	req := user("Weather?")
	req.CacheKey = "sess_1"
	_, err1 := stream(t, rec, req)
	want, err2 := stream(t, rec, req)
	if !errors.Is(err1, limited) || err2 != nil {
		t.Fatalf("recording: %v, %v", err1, err2)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(files) != 1 || filepath.Base(files[0]) != modeltest.Key(req)+".json" {
		t.Fatalf("cassettes %q, want one: %s.json", files, modeltest.Key(req))
	}

	r, err := modeltest.Replay(dir)
	if err != nil {
		t.Fatal(err)
	}
	again := user("Weather?")
	again.CacheKey = "sess_2"
	_, err = stream(t, r, again)
	e, ok := errors.AsType[*model.Error](err)
	if !ok || e.Reason != model.ReasonRateLimited || e.Status != 429 || e.RetryAfter != 2*time.Second || e.Message != "slow down" {
		t.Errorf("the first replay failed with %#v, want the recorded rate limit", err)
	}
	for i := range 2 {
		got, err := stream(t, r, again)
		if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("replay %d streamed %q, %v; want %q", i+2, got, err, want)
		}
	}
	if !strings.Contains(strings.Join(want, "\n"), `call c1 weather {"city": `) || !strings.Contains(strings.Join(want, "\n"), `block "Think.\nHard." sig`) {
		t.Errorf("recorded %q", want)
	}

	spaced := &model.Request{Messages: []model.Message{{Role: model.User, Text: "x"},
		{Role: model.Assistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "weather", Input: []byte(`{ "city" : "Paris" }`)}}}}}
	compact := &model.Request{Messages: []model.Message{{Role: model.User, Text: "x"},
		{Role: model.Assistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "weather", Input: []byte(`{"city":"Paris"}`)}}}}}
	if modeltest.Key(spaced) != modeltest.Key(compact) {
		t.Error("JSON's spacing changed a request's key")
	}
	if modeltest.Key(user("a")) == modeltest.Key(user("b")) {
		t.Error("two requests have one key")
	}
}

// Recording again into a directory replaces the cassettes it records
// anew, keeping the others; a call the caller stopped reading is not
// recorded.
func TestRecordAgain(t *testing.T) {
	dir := t.TempDir()
	for _, answer := range []string{"old", "new"} {
		rec, err := modeltest.Record(modeltest.New(modeltest.Text(answer)), dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stream(t, rec, user("q")); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := modeltest.Record(modeltest.New(modeltest.Text("cut short")), dir)
	if err != nil {
		t.Fatal(err)
	}
	for range rec.Stream(context.Background(), user("other")) {
		break
	}
	r, err := modeltest.Replay(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := stream(t, r, user("q"))
	if err != nil || len(got) != 2 || got[0] != `text "new"` {
		t.Errorf("replayed %q, %v; want the answer recorded last", got, err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(files) != 1 {
		t.Errorf("cassettes %q, want 1: an unfinished call is not recorded", files)
	}
}

// A cassette that cannot be written fails the call, saying so.
func TestRecordWriteFails(t *testing.T) {
	dir := t.TempDir()
	rec, err := modeltest.Record(modeltest.New(modeltest.Text("lost")), dir)
	if err != nil {
		t.Fatal(err)
	}
	// A directory where the cassette goes: no one can replace it.
	if err := os.MkdirAll(filepath.Join(dir, modeltest.Key(user("q"))+".json", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = stream(t, rec, user("q"))
	if err == nil || !strings.Contains(err.Error(), "recording a model call: writing the cassette") {
		t.Errorf("err = %v, want the failed write", err)
	}
}

// The diff against the closest cassette names what changed, among
// several cassettes: a tool result, here.
func TestReplayDiffClosest(t *testing.T) {
	dir := t.TempDir()
	rec, err := modeltest.Record(modeltest.New(modeltest.Text("a"), modeltest.Text("b")), dir)
	if err != nil {
		t.Fatal(err)
	}
	result := func(content string) *model.Request {
		return &model.Request{System: "Be brief.", Messages: []model.Message{
			{Role: model.User, Text: "Weather?"},
			{Role: model.Assistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "weather", Input: []byte(`{}`)}}},
			{Role: model.User, ToolResults: []model.ToolResult{{CallID: "c1", Content: content}}},
		}}
	}
	for _, req := range []*model.Request{user("Something else entirely, at length."), result("sunny\n21 °C")} {
		if _, err := stream(t, rec, req); err != nil {
			t.Fatal(err)
		}
	}
	r, err := modeltest.Replay(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = stream(t, r, result("sunny\n22 °C"))
	want := `the closest cassette, ` + modeltest.Key(result("sunny\n21 °C")) + `.json, was recorded for a request that differs (- recorded, + asked):
  messages[1] assistant calls weather {} (id c1)
  messages[2] user result of c1: "sunny"
- messages[2] user result of c1: "21 °C"
+ messages[2] user result of c1: "22 °C"`
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("err = %v\nwant it to end with\n%s", err, want)
	}
}
