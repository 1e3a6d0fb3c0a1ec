package channel

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// Auth says how a route's requests are authenticated. The zero value is
// the host's bearer token (Authorization: Bearer <token>, as for the API);
// [Verify] and [HMACSHA256] make a verifier of the channel's own, for
// callers that cannot send the host's token (webhooks). A request that
// fails is answered 401 and its handler does not run.
type Auth struct {
	custom bool
	verify func(r *http.Request, body []byte) error
}

// BearerToken is the host's bearer token: the zero Auth, named.
var BearerToken = Auth{}

// Verify authenticates a route's requests with fn, given the request and
// its whole body (the handler can read the body again): nil accepts the
// request, an error refuses it. A nil fn is refused when the channel is
// defined.
func Verify(fn func(r *http.Request, body []byte) error) Auth {
	return Auth{custom: true, verify: fn}
}

// HMACSHA256 verifies a signature of the raw body: header holds prefix
// followed by the hex HMAC-SHA256 of the body, keyed by the secret in the
// environment variable secretEnv (GitHub: "X-Hub-Signature-256",
// "sha256=", "GITHUB_WEBHOOK_SECRET"). While the variable is unset or
// empty every request is refused.
func HMACSHA256(header, prefix, secretEnv string) Auth {
	return Verify(func(r *http.Request, body []byte) error {
		secret := os.Getenv(secretEnv)
		if secret == "" {
			return fmt.Errorf("the signing secret is not set: set %s in the host's environment", secretEnv)
		}
		got, ok := strings.CutPrefix(r.Header.Get(header), prefix)
		if !ok || got == "" {
			return fmt.Errorf("no %s header of the form %s<hex>", header, prefix)
		}
		sig, err := hex.DecodeString(got)
		if err != nil {
			return fmt.Errorf("the %s header is not hex", header)
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		if !hmac.Equal(sig, mac.Sum(nil)) {
			return errors.New("the signature does not match the body")
		}
		return nil
	})
}

// IsBearer reports whether requests are checked against the host's bearer
// token (the host does that); otherwise [Auth.Check] verifies them.
func (a Auth) IsBearer() bool { return !a.custom }

// Check runs the route's verifier on a request and its body. Hosts call
// it; for a bearer route it refuses everything (the host checks those).
func (a Auth) Check(r *http.Request, body []byte) error {
	if !a.custom || a.verify == nil {
		return errors.New("the route takes the host's bearer token")
	}
	return a.verify(r, body)
}
