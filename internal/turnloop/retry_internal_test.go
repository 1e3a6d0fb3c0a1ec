package turnloop

import (
	"testing"
	"time"
)

// TestBackoff: full jitter under a ceiling doubling from RetryBase to
// RetryCap.
func TestBackoff(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 40; n++ {
		ceiling := min(RetryBase<<min(n-1, 15), RetryCap)
		var most time.Duration
		for range 200 {
			d := backoff(n)
			if d < 0 || d > ceiling {
				t.Fatalf("backoff(%d) = %s, outside [0, %s]", n, d, ceiling)
			}
			most = max(most, d)
		}
		if most < ceiling/2 {
			t.Errorf("backoff(%d) never above %s in 200 tries (ceiling %s): no jitter over the range", n, most, ceiling)
		}
	}
}
