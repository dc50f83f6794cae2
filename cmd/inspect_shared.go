package cmd

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/lockcore"
	"github.com/spf13/cobra"
)

// permitsUsage is --permits' help, shared by inspect and watch.
const permitsUsage = "most holders a semaphore or shared lock may admit: more live permits in use is OVER_ADMITTED (error)"

// addPermitsFlag adds --permits to inspect or watch.
func addPermitsFlag(cmd *cobra.Command, permits *int64) {
	cmd.Flags().Int64Var(permits, "permits", 0, permitsUsage)
}

// checkPermits refuses a --permits given below 1 (pflag refuses a non-number).
func checkPermits(cmd *cobra.Command, permits int64) error {
	if cmd.Flags().Changed("permits") && permits < 1 {
		return usageErrorf("permits %d must be at least 1 (the semaphore's size)", permits)
	}
	return nil
}

// maxHoldersShown bounds the holders listed per key in the table.
const maxHoldersShown = 5

// sharedLine is the table's line for a semaphore or shared lock: permits
// in use and each holder with its mode, permits, age and lease, or "".
func sharedLine(l inspect.Lock) string {
	if l.Holders == nil {
		return ""
	}
	inUse := "?"
	if l.PermitsInUse != nil {
		inUse = strconv.FormatInt(*l.PermitsInUse, 10)
	}
	if l.Permits != nil {
		inUse += " of " + strconv.FormatInt(*l.Permits, 10)
	}
	parts := make([]string, 0, min(len(l.Holders), maxHoldersShown)+1)
	for i, h := range l.Holders {
		if i == maxHoldersShown {
			parts = append(parts, fmt.Sprintf("and %d more", len(l.Holders)-i))
			break
		}
		parts = append(parts, sharedHolderText(h))
	}
	return fmt.Sprintf("%s, %s in use: %s", plural(len(l.Holders), "holder", "holders"), plural1(inUse), strings.Join(parts, "; "))
}

// plural1 is "1 permit" or "n permits" for a count already formatted.
func plural1(n string) string {
	if n == "1" {
		return "1 permit"
	}
	return n + " permits"
}

// sharedHolderText is one holder: owner (shortened), mode, permits, age, lease.
func sharedHolderText(h inspect.SharedHolder) string {
	owner := oneLineText(h.Owner)
	if owner == "" {
		owner = "hex:" + h.OwnerHex
	}
	if r := []rune(owner); len(r) > 40 {
		owner = string(r[:39]) + "…"
	}
	var about []string
	if h.Mode != "" {
		about = append(about, h.Mode)
	}
	if h.Permits > 1 {
		about = append(about, strconv.FormatInt(h.Permits, 10)+" permits")
	}
	if h.HoldCount != nil {
		about = append(about, "hold count "+strconv.FormatInt(*h.HoldCount, 10))
	}
	if h.AgeMS != nil {
		about = append(about, "age "+msText(*h.AgeMS))
	}
	switch {
	case h.Expired && h.TTLMS == nil:
		about = append(about, "EXPIRED")
	case h.TTLMS == nil && h.ExpiresAt == "" && h.Mode == "":
		about = append(about, "no lease")
	case h.TTLMS == nil:
	case h.Expired:
		about = append(about, "EXPIRED "+msText(-*h.TTLMS)+" ago")
	default:
		about = append(about, msText(*h.TTLMS)+" left")
	}
	if len(about) == 0 {
		return owner
	}
	return owner + " (" + strings.Join(about, ", ") + ")"
}

func msText(ms int64) string {
	return lockcore.FormatDuration(time.Duration(ms) * time.Millisecond)
}
