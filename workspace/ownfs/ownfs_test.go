package ownfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLinksAreRefusedNeverFollowed: a link at any name below the base (the
// folder, a folder inside it, the file) refuses the access, and the
// link's target is untouched.
func TestLinksAreRefusedNeverFollowed(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, base, target string)
		open  func(base string) error
	}{
		{"the folder is a link", func(t *testing.T, base, target string) {
			link(t, target, filepath.Join(base, "state"))
		}, func(base string) error {
			d, err := Open(base, "state", true, 0o700)
			if err == nil {
				defer d.Close()
				return d.WriteFile("x.log", []byte("written"), 0o600)
			}
			return err
		}},
		{"a folder inside is a link", func(t *testing.T, base, target string) {
			os.Mkdir(filepath.Join(base, "state"), 0o700)
			link(t, target, filepath.Join(base, "state", "tasks"))
		}, func(base string) error {
			d, err := Open(base, "state", true, 0o700)
			if err != nil {
				return err
			}
			defer d.Close()
			f, err := d.OpenFile("tasks/x.md", os.O_WRONLY|os.O_CREATE, 0o600)
			if err == nil {
				f.WriteString("written")
				f.Close()
			}
			return err
		}},
		{"the file is a link, opened to append", func(t *testing.T, base, target string) {
			os.Mkdir(filepath.Join(base, "state"), 0o700)
			link(t, filepath.Join(target, "victim"), filepath.Join(base, "state", "agentls.log"))
		}, func(base string) error {
			d, err := Open(base, "state", true, 0o700)
			if err != nil {
				return err
			}
			defer d.Close()
			f, err := d.OpenFile("agentls.log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err == nil {
				f.WriteString("written")
				f.Close()
			}
			return err
		}},
		{"the file is a hard link, opened to write", func(t *testing.T, base, target string) {
			os.Mkdir(filepath.Join(base, "state"), 0o700)
			if err := os.Link(filepath.Join(target, "victim"), filepath.Join(base, "state", "agentls.log")); err != nil {
				t.Fatal(err)
			}
		}, func(base string) error {
			d, err := Open(base, "state", true, 0o700)
			if err != nil {
				return err
			}
			defer d.Close()
			f, err := d.OpenFile("agentls.log", os.O_WRONLY|os.O_APPEND, 0o600)
			if err == nil {
				f.WriteString("written")
				f.Close()
			}
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, target := t.TempDir(), t.TempDir()
			victim := filepath.Join(target, "victim")
			if err := os.WriteFile(victim, []byte("before"), 0o600); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, base, target)
			err := tt.open(base)
			if !errors.Is(err, ErrLink) {
				t.Errorf("err = %v; want ErrLink", err)
			}
			if b, _ := os.ReadFile(victim); string(b) != "before" {
				t.Errorf("the link's target now holds %q", b)
			}
			if ents, _ := os.ReadDir(target); len(ents) != 1 {
				t.Errorf("the link's target folder holds %d entries; want only the victim", len(ents))
			}
		})
	}
}

// TestWriteFileReplacesALinkInsteadOfFollowingIt: the atomic write renames
// over the name, so a link planted there is replaced and its target kept.
func TestWriteFileReplacesALinkInsteadOfFollowingIt(t *testing.T) {
	base, target := t.TempDir(), t.TempDir()
	victim := filepath.Join(target, "victim")
	os.WriteFile(victim, []byte("before"), 0o600)
	link(t, victim, filepath.Join(base, "acp-sessions.json.tmp"))
	link(t, victim, filepath.Join(base, "acp-sessions.json"))
	d, err := Open(base, "", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.WriteFile("acp-sessions.json", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "before" {
		t.Errorf("victim = %q", b)
	}
	fi, err := os.Lstat(filepath.Join(base, "acp-sessions.json"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Errorf("acp-sessions.json is %v, %v; want a regular file", fi, err)
	}
	if b, err := d.ReadFile("acp-sessions.json"); string(b) != "new" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	if err := d.CheckNoLinks("acp-sessions.json.tmp"); !errors.Is(err, ErrLink) {
		t.Errorf("CheckNoLinks on a link: %v; want ErrLink", err)
	}
	if err := d.CheckNoLinks("acp-sessions.json", "missing"); err != nil {
		t.Errorf("CheckNoLinks on a file and a missing name: %v", err)
	}
}

// TestPrivateFolder: the temporary-folder fallback is made 0700 and used;
// one that is a link, that others may write or that another user owns is
// refused, never repaired or followed.
func TestPrivateFolder(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, p string)
		ok    bool
	}{
		{"missing: created 0700", func(t *testing.T, p string) {}, true},
		{"a link to a folder of ours", func(t *testing.T, p string) { link(t, t.TempDir(), p) }, false},
		{"others may write it", func(t *testing.T, p string) { os.Mkdir(p, 0o777); os.Chmod(p, 0o777) }, false},
		{"another user's", func(t *testing.T, p string) {
			if os.Getuid() != 0 {
				t.Skip("only root can give a folder to another user")
			}
			os.Mkdir(p, 0o700)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			p := filepath.Join(base, "agentls-1000")
			tt.plant(t, p)
			d, err := Private(base, "agentls-1000")
			if !tt.ok {
				if err == nil {
					d.Close()
					t.Fatal("accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if fi, _ := os.Lstat(p); !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("made %v", fi.Mode())
			}
		})
	}
}

// TestNamesStayBelowTheFolder: absolute names and ".." are refused.
func TestNamesStayBelowTheFolder(t *testing.T) {
	d, err := Open(t.TempDir(), "", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, n := range []string{"/etc/passwd", "../x", "a/../../x", ""} {
		if _, err := d.OpenFile(n, os.O_RDONLY, 0); !errors.Is(err, os.ErrInvalid) {
			t.Errorf("%q: %v; want ErrInvalid", n, err)
		}
	}
}

func link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}
