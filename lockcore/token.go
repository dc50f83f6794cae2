package lockcore

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// NewOwnerToken returns a fresh 128-bit random owner token as 32 lowercase
// hex characters. Owner tokens tell holders apart so renew and release can be
// owner-checked (Redis docs, "Distributed locks with Redis": a random value
// unique across all clients and all lock requests).
func NewOwnerToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// FormatValue returns the lock value of the reference platform: "<fence>:<owner>".
func FormatValue(fence int64, owner string) string {
	return strconv.FormatInt(fence, 10) + ":" + owner
}

// ParseValue splits a "<fence>:<owner>" lock value. It returns an error when
// the value has no colon, a fence that is not a non-negative integer, or an
// empty owner.
func ParseValue(v string) (fence int64, owner string, err error) {
	f, o, ok := strings.Cut(v, ":")
	if !ok {
		return 0, "", fmt.Errorf("lock value %q is not <fence>:<owner>", v)
	}
	fence, err = strconv.ParseInt(f, 10, 64)
	if err != nil || fence < 0 || o == "" {
		return 0, "", fmt.Errorf("lock value %q is not <fence>:<owner>", v)
	}
	return fence, o, nil
}
