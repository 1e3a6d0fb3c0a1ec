package model

import "fmt"

// StandIn is the text a provider sends in place of an image it cannot
// send, saying which image it is and why it is not shown.
func (i Image) StandIn(why string) string {
	name := i.Name
	if name == "" {
		name = "an image"
	}
	return fmt.Sprintf("[%s (%s, %d bytes) is not shown: %s]", name, i.MimeType, len(i.Data), why)
}
