package conformance

// knownFailures names the cases where today's detector is wrong, each with
// the issue item that fixes it. A listed case that fails is logged, not
// failed; one that passes says so in the log ("now passes"). Delete an entry
// when its fix lands: the case then fails CI if the detector regresses.
var knownFailures = map[string]string{}
