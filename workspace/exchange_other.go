//go:build !linux

package workspace

// exchangeChecked is only available on Linux; elsewhere the caller
// renames after its last check.
func exchangeChecked(r *root, tmp, rel string, data, want []byte) error { return errNoExchange }
