package exporter

import (
	_ "embed"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/lockcore"
)

//go:embed rules.yml
var rulesTemplate string

// Rules returns the Prometheus alerting rules (YAML, rules.yml) for a
// renewal bound: the bucket bound of LockctlLockHeldPastRenewalBound is
// renewBound in seconds, formatted as the client library writes le.
func Rules(renewBound time.Duration) string {
	if renewBound <= 0 {
		renewBound = lockcore.DefaultRenewBound
	}
	return strings.NewReplacer(
		"@RENEW_BOUND_S@", strconv.FormatFloat(renewBound.Seconds(), 'g', -1, 64),
		"@RENEW_BOUND@", lockcore.FormatDuration(renewBound),
	).Replace(rulesTemplate)
}
