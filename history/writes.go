package history

// Write is one committed write of a history, in commit order: the fencing
// token it carried and its idempotency key (nil when the history has none)
// and the resource it wrote ("" for the one resource of a history that
// names none).
type Write struct {
	Fence    *int64
	Key      *string
	Resource string
}

// Stale is a stale write found by StaleWrites: Write is its index in the
// writes, After the index of the earlier write with the higher fence.
type Stale struct {
	Write, After int
}

// StaleWrites returns the writes whose fence is below the highest fence
// already committed for their resource, in commit order: the write boundary
// let an old holder through (Kleppmann 2016). Writes without a fence are
// not compared.
func StaleWrites(writes []Write) []Stale {
	var out []Stale
	highest := map[string]int{}
	for i, w := range writes {
		if w.Fence == nil {
			continue
		}
		h, seen := highest[w.Resource]
		switch {
		case !seen || *w.Fence > *writes[h].Fence:
			highest[w.Resource] = i
		case *w.Fence < *writes[h].Fence:
			out = append(out, Stale{Write: i, After: h})
		}
	}
	return out
}

// DuplicateKeys returns, for each idempotency key committed more than once,
// the indexes of its writes in commit order; keys in the order of their
// second write. Writes without a key are passed over.
func DuplicateKeys(writes []Write) [][]int {
	byKey := map[string][]int{}
	var order []string
	for i, w := range writes {
		if w.Key == nil {
			continue
		}
		if len(byKey[*w.Key]) == 1 {
			order = append(order, *w.Key)
		}
		byKey[*w.Key] = append(byKey[*w.Key], i)
	}
	out := make([][]int, 0, len(order))
	for _, k := range order {
		out = append(out, byKey[k])
	}
	return out
}
