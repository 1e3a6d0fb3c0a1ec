package tool

import (
	"fmt"
	"reflect"
)

// Approval says whether a call of a tool needs a person's sign-off before it
// runs. The zero Approval never needs one; [Always] always does; [When]
// decides from the validated input.
type Approval struct {
	always bool
	in     reflect.Type   // the predicate's input type, for When
	pred   func(any) bool // the predicate over the boxed input, for When
	err    error          // a When given a nil predicate
}

// Always is the Approval of a tool every call of which needs approval.
var Always = Approval{always: true}

// When returns an Approval decided by pred over the validated input. The
// predicate's input type must be the handler's input type; [Define] checks
// it. A predicate that panics is taken to say "needs approval".
func When[In any](pred func(In) bool) Approval {
	a := Approval{in: reflect.TypeFor[In]()}
	if pred == nil {
		a.err = fmt.Errorf("NeedsApproval: tool.When was given a nil predicate")
		return a
	}
	a.pred = func(v any) bool { return pred(*v.(*In)) }
	return a
}

// Mode describes the Approval: "never", "always" or "conditional".
func (a Approval) Mode() string {
	switch {
	case a.always:
		return "always"
	case a.in != nil:
		return "conditional"
	}
	return "never"
}

// check validates the Approval against the handler's input type.
func (a Approval) checkType(in reflect.Type) error {
	if a.err != nil {
		return a.err
	}
	if a.in != nil && a.in != in {
		return fmt.Errorf("NeedsApproval: the predicate takes %s but the handler's input is %s", a.in, in)
	}
	return nil
}

// check evaluates the Approval for a boxed input value.
func (a Approval) check(v any) (needed bool, err error) {
	if a.always {
		return true, nil
	}
	if a.pred == nil {
		return false, nil
	}
	defer func() {
		if p := recover(); p != nil {
			needed, err = true, fmt.Errorf("approval predicate panicked (approval needed): %v", p)
		}
	}()
	return a.pred(v), nil
}
