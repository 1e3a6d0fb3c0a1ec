package store

import "testing"

// The bound of a prefix's range: the smallest string greater than every
// string with the prefix, in bytes (prefixEnd) and among valid UTF-8
// strings (prefixEndUTF8).
func TestPrefixEnd(t *testing.T) {
	for _, tt := range []struct {
		name, prefix    string
		bytes, utf8     string // "" for no bound
		bytesOK, utf8OK bool
	}{
		{"empty", "", "", "", false, false},
		{"ascii", "user/", "user0", "user0", true, true},
		{"last byte 0x7f", "a\x7f", "a\x80", "a\u0080", true, true},
		{"before a new lead byte", "¿", "\xc2\xc0", "À", true, true},
		{"before the surrogates", "\ud7ff", "\xed\x9f\xc0", "\ue000", true, true},
		{"the last rune", "a\U0010ffff", "a\xf4\x8f\xbf\xc0", "b", true, true},
		{"only the last rune", "\U0010ffff", "\xf4\x8f\xbf\xc0", "", true, false},
		{"not UTF-8", "a\xff", "b", "b", true, true},
		{"all 0xff", "\xff\xff", "", "", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := prefixEnd(tt.prefix); got != tt.bytes || ok != tt.bytesOK {
				t.Errorf("prefixEnd(%q) = %q, %v; want %q, %v", tt.prefix, got, ok, tt.bytes, tt.bytesOK)
			}
			if got, ok := prefixEndUTF8(tt.prefix); got != tt.utf8 || ok != tt.utf8OK {
				t.Errorf("prefixEndUTF8(%q) = %q, %v; want %q, %v", tt.prefix, got, ok, tt.utf8, tt.utf8OK)
			}
		})
	}
}
