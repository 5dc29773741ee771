package server

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestLogFileIsNeverFollowed: the log in the user's state folder, or the
// folder itself, replaced by a link (what a confined program would plant)
// is not written through: the log goes to the private temporary folder
// and the link's target is untouched. A temporary folder that is a link
// or another user's is refused too: no log rather than a log elsewhere.
func TestLogFileIsNeverFollowed(t *testing.T) {
	tests := []struct {
		name     string
		plant    func(t *testing.T, state, tmp, victim string)
		fallback bool // the log opens in the private temporary folder
	}{
		{"nothing planted", func(*testing.T, string, string, string) {}, false},
		{"the log is a link", func(t *testing.T, state, _, victim string) {
			os.MkdirAll(filepath.Join(state, "agentls"), 0o700)
			symlink(t, victim, filepath.Join(state, "agentls", LogFileName))
		}, true},
		{"the log is a hard link", func(t *testing.T, state, _, victim string) {
			os.MkdirAll(filepath.Join(state, "agentls"), 0o700)
			if err := os.Link(victim, filepath.Join(state, "agentls", LogFileName)); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"the log's folder is a link", func(t *testing.T, state, _, victim string) {
			symlink(t, filepath.Dir(victim), filepath.Join(state, "agentls"))
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state, tmp, victimDir := t.TempDir(), t.TempDir(), t.TempDir()
			t.Setenv("XDG_STATE_HOME", state)
			t.Setenv("TMPDIR", tmp)
			victim := filepath.Join(victimDir, "agentls.log")
			os.WriteFile(victim, []byte("before\n"), 0o600)
			tt.plant(t, state, tmp, victim)
			want := filepath.Join(state, "agentls", LogFileName)
			if got := DefaultLogFile(); got != want {
				t.Fatalf("DefaultLogFile() = %s; want %s", got, want)
			}
			f, opened, err := OpenLogFile(DefaultLogFile())
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("level=INFO msg=\"$(touch PWNED)\"\n")
			f.Close()
			if tt.fallback {
				want = filepath.Join(tmp, "agentls-"+strconv.Itoa(os.Getuid()), LogFileName)
			}
			if opened != want {
				t.Errorf("opened %s; want %s", opened, want)
			}
			if b, _ := os.ReadFile(victim); string(b) != "before\n" {
				t.Errorf("the link's target now holds %q", b)
			}
		})
	}

	fallbacks := []struct {
		name  string
		plant func(t *testing.T, p string)
	}{
		{"a link", func(t *testing.T, p string) { symlink(t, t.TempDir(), p) }},
		{"writable by others", func(t *testing.T, p string) { os.Mkdir(p, 0o700); os.Chmod(p, 0o733) }},
		{"another user's", func(t *testing.T, p string) {
			if os.Getuid() != 0 {
				t.Skip("only root can give a folder to another user")
			}
			os.Mkdir(p, 0o700)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range fallbacks {
		t.Run("no home, the temporary folder is "+tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("XDG_STATE_HOME", "")
			t.Setenv("HOME", "")
			t.Setenv("TMPDIR", tmp)
			p := filepath.Join(tmp, "agentls-"+strconv.Itoa(os.Getuid()))
			tt.plant(t, p)
			if got := DefaultLogFile(); got != filepath.Join(p, LogFileName) {
				t.Fatalf("DefaultLogFile() = %s", got)
			}
			if f, opened, err := OpenLogFile(DefaultLogFile()); err == nil {
				f.Close()
				t.Errorf("opened %s in a temporary folder that is %s", opened, tt.name)
			}
		})
	}
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}
