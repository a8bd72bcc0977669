package main

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func (d *fileDecoder) str(n *node, path string) (string, error) {
	if n.kind != nodeScalar || n.tag != tagString {
		hint := ""
		if n.kind == nodeScalar && n.tag != tagNull {
			hint = " (quote it)"
		}
		return "", d.errorf(n, path, "want a string, got %s%s", n.describe(), hint)
	}
	return n.value, nil
}

func (d *fileDecoder) integer(n *node, path string) (int, error) {
	if n.kind == nodeScalar && n.tag == tagInt {
		v, err := strconv.ParseInt(n.value, 0, 32)
		if err != nil {
			return 0, d.errorf(n, path, "%s is out of range", n.value)
		}
		return int(v), nil
	}
	return 0, d.errorf(n, path, "want a whole number, got %s", n.describe())
}

func (d *fileDecoder) boolean(n *node, path string) (bool, error) {
	if n.kind == nodeScalar && n.tag == tagBool {
		switch strings.ToLower(n.value) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, d.errorf(n, path, "want true or false, got %s", n.describe())
}

func (d *fileDecoder) duration(n *node, path string) (time.Duration, error) {
	if n.kind == nodeScalar && n.tag == tagString {
		if v, err := time.ParseDuration(n.value); err == nil {
			return v, nil
		}
	}
	return 0, d.errorf(n, path, `want a duration such as "90s", "5m" or "1h30m", got %s`, n.describe())
}

func (d *fileDecoder) instant(n *node, path string) (time.Time, error) {
	if n.kind == nodeScalar && (n.tag == tagString || n.tag == tagTimestamp) {
		if v, err := time.Parse(time.RFC3339, n.value); err == nil {
			return v, nil
		}
	}
	return time.Time{}, d.errorf(n, path, "want an RFC 3339 time such as 2026-12-04T10:00:00Z or 2026-12-04T11:00:00+01:00")
}

// strs decodes a list of strings (or one string, a list of one), none
// empty, at least one.
func (d *fileDecoder) strs(n *node, path string) ([]string, error) {
	if n.kind == nodeSequence && len(n.items) == 0 {
		return nil, d.errorf(n, path, "the list is empty")
	}
	if n.kind != nodeSequence && (n.kind != nodeScalar || n.tag != tagString) {
		return nil, d.errorf(n, path, "want a list of strings, got %s", n.describe())
	}
	out := make([]string, max(len(n.items), 1))
	for i := range out {
		it, p := d.item(n, path, i)
		s, err := d.str(it, p)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(s) == "" {
			return nil, d.errorf(it, p, "empty")
		}
		out[i] = s
	}
	return out, nil
}

// item returns item i of n, a list or a single value standing for a list
// of one, and its path.
func (d *fileDecoder) item(n *node, path string, i int) (*node, string) {
	if n.kind != nodeSequence {
		return n, path
	}
	return n.items[i], fmt.Sprintf("%s[%d]", path, i)
}

// list decodes each item of the sequence n with f.
func (d *fileDecoder) list(n *node, path string, f func(item *node, path string) error) error {
	if n.kind != nodeSequence {
		return d.errorf(n, path, "want a list, got %s", n.describe())
	}
	for i, it := range n.items {
		if err := f(it, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// path decodes a file path, relative to the config file's directory.
func (d *fileDecoder) path(n *node, path string) (string, error) {
	p, err := d.str(n, path)
	if err != nil {
		return "", err
	}
	if p == "" {
		return "", d.errorf(n, path, "an empty file name")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(d.dir, p)
	}
	return p, nil
}

// networks decodes a list of CIDRs.
func (d *fileDecoder) networks(n *node, path string) ([]netip.Prefix, error) {
	cidrs, err := d.strs(n, path)
	if err != nil {
		return nil, err
	}
	out := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		if out[i], err = netip.ParsePrefix(strings.TrimSpace(c)); err != nil {
			it, p := d.item(n, path, i)
			return nil, d.errorf(it, p, "want a network such as 10.0.0.0/8 or 2001:db8::/32, got %q", c)
		}
	}
	return out, nil
}
