package slackbot

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/httpjson"
	"github.com/agentsdk/agentsdk/tool"
)

// Slack's request headers.
const (
	headerSignature = "X-Slack-Signature"
	headerTimestamp = "X-Slack-Request-Timestamp"
	headerRetryNum  = "X-Slack-Retry-Num"
)

// verify checks a request's signature and timestamp: Slack's v0 scheme,
// the hex HMAC-SHA256 of "v0:<timestamp>:<body>" keyed by the signing
// secret, compared in constant time, with a timestamp at most five minutes
// from now. Replays are refused by the handlers (checkReplay), which have
// the store.
func (b *Bot) verify(r *http.Request, body []byte) error {
	ts, sig := r.Header.Get(headerTimestamp), r.Header.Get(headerSignature)
	if ts == "" || sig == "" {
		return fmt.Errorf("no %s or %s header", headerSignature, headerTimestamp)
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(ts) > 12 {
		return fmt.Errorf("the %s header is not a Unix time", headerTimestamp)
	}
	now := b.now().Unix()
	if skew := now - secs; skew > int64(maxSkew.Seconds()) || skew < -int64(maxSkew.Seconds()) {
		return fmt.Errorf("the request's timestamp is more than %v from now", maxSkew)
	}
	hexSig, ok := strings.CutPrefix(sig, "v0=")
	got, err := hex.DecodeString(hexSig)
	if !ok || err != nil || len(got) != sha256.Size {
		return fmt.Errorf("the %s header is not v0=<hex HMAC-SHA256>", headerSignature)
	}
	mac := hmac.New(sha256.New, []byte(b.cfg.SigningSecret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return errors.New("the signature does not match the request")
	}
	return nil
}

// checkReplay refuses a request whose signature was seen before (within
// the timestamps accepted), on any host sharing the store: the signature
// is claimed in KV only if absent. It answers the refusal itself and
// returns false.
func (b *Bot) checkReplay(ctx context.Context, kv tool.KV, w http.ResponseWriter, r *http.Request) bool {
	// The signature as verify decoded it: hex in any case is one key.
	sig := strings.ToLower(strings.TrimPrefix(r.Header.Get(headerSignature), "v0="))
	_, err := kv.CompareAndSet(ctx, keySignature+sig, 0, []byte(r.Header.Get(headerTimestamp)), &tool.KVSetOptions{TTL: replayTTL})
	switch {
	case errors.Is(err, tool.ErrVersionConflict):
		b.log.Warn("slackbot: refused a replayed request", "path", r.URL.Path)
		w.Header().Set("Connection", "close")
		httpjson.Error(w, &api.Error{Code: api.CodeUnauthorized, Message: "the request failed the channel's verification: the request was replayed (its signature was seen before)"})
		return false
	case err != nil:
		b.log.Error("slackbot: recording a request's signature", "err", err)
		httpjson.Error(w, api.Errorf(api.CodeInternal, "recording the request's signature: %v", err))
		return false
	}
	return true
}

// ready answers 503 before Attach and returns false.
func (b *Bot) ready(w http.ResponseWriter) bool {
	if _, ctx := b.attached(); ctx != nil {
		return true
	}
	w.Header().Set("Retry-After", "1")
	httpjson.Write(w, http.StatusServiceUnavailable, api.ErrorResponse{Error: &api.Error{Code: api.CodeOverCapacity,
		Message: "the slack channel is not attached to its host yet (slackbot.Bot.Attach)"}})
	return false
}

// badRequest answers 400 with what is wrong.
func badRequest(w http.ResponseWriter, format string, args ...any) {
	httpjson.Error(w, api.Errorf(api.CodeBadRequest, format, args...))
}

// recovered turns a handler's panic into a 500 (hostile input must never
// take anything down; a panic here is a bug, logged with the path).
func (b *Bot) recovered(w http.ResponseWriter, r *http.Request) {
	if v := recover(); v != nil {
		b.log.Error("slackbot: panic serving a request", "path", r.URL.Path, "panic", v)
		httpjson.Error(w, api.Errorf(api.CodeInternal, "the slack channel failed on this request"))
	}
}
