package main

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom"
)

// fileValue is one setting a config file gives.
type fileValue struct {
	// id is the flag the setting stands for ("total-active-users"), or,
	// for a setting only the file has, its field ("language").
	id string
	// flag reports whether id is a flag, which the command line overrides.
	flag bool
	// where is the setting's position and field ("room.yaml:4:20:
	// totalActiveUsers"), for messages.
	where string
	set   func(*options)
}

// fileDecoder reads a config file into fileValues.
type fileDecoder struct {
	// name is the file as given on the command line; its extension picks
	// the format.
	name string
	// dir is where relative paths in the file (templates) start from: the
	// file's directory.
	dir string
	// readFile reads a file the config names.
	readFile func(path string) ([]byte, error)
}

// loadConfigFile reads and decodes the config file at path. Every error
// names the file and, where it is known, the position and the field.
func loadConfigFile(path string) ([]fileValue, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, fmt.Errorf("-config: %w", err)
	}
	d := &fileDecoder{name: path, dir: filepath.Dir(path), readFile: readLimited}
	return d.decode(data)
}

// readLimited reads a file of at most maxFileSize bytes.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("%s: larger than %d KiB", path, maxFileSize>>10)
	}
	return b, nil
}

// decode parses data, JSON or YAML as the file's extension says, and
// decodes its settings.
func (d *fileDecoder) decode(data []byte) ([]fileValue, error) {
	var parse func([]byte) (*node, error)
	switch strings.ToLower(filepath.Ext(d.name)) {
	case ".json":
		parse = parseJSON
	case ".yaml", ".yml":
		parse = parseYAML
	default:
		return nil, fmt.Errorf("%s: unknown format: name the file .json, .yaml or .yml", d.name)
	}
	root, err := parse(data)
	if err != nil {
		var pe *posError
		if errors.As(err, &pe) && pe.line > 0 {
			return nil, fmt.Errorf("%s:%v", d.name, err)
		}
		return nil, fmt.Errorf("%s: %v", d.name, err)
	}
	if root.kind != nodeMapping {
		return nil, d.errorf(root, "", "want a mapping of settings at the top, got %s", root.describe())
	}
	return d.settings(root)
}

// at names a position and field of the file: "room.yaml:4:20: events[0].start".
func (d *fileDecoder) at(n *node, path string) string {
	s := fmt.Sprintf("%s:%d:%d", d.name, n.line, n.col)
	if path != "" {
		s += ": " + path
	}
	return s
}

func (d *fileDecoder) errorf(n *node, path, format string, a ...any) error {
	return fmt.Errorf("%s: %s", d.at(n, path), fmt.Sprintf(format, a...))
}

// decodeFunc decodes the value n of the field at path.
type decodeFunc func(n *node, path string) error

// fields decodes the mapping n with the decoders of known, by key. An
// unknown or repeated key is an error; a null value is as if the key were
// not there.
func (d *fileDecoder) fields(n *node, path string, known map[string]decodeFunc) error {
	if n.kind != nodeMapping {
		return d.errorf(n, path, "want a mapping, got %s", n.describe())
	}
	seen := map[string]*node{}
	for i, k := range n.keys {
		p := joinPath(path, k.value)
		if first, dup := seen[k.value]; dup {
			return d.errorf(k, p, "set twice (first at line %d)", first.line)
		}
		seen[k.value] = k
		f, ok := known[k.value]
		if !ok {
			return d.unknown(k, p, known)
		}
		if v := n.vals[i]; v.kind != nodeScalar || v.tag != tagNull {
			if err := f(v, p); err != nil {
				return err
			}
		}
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fold reduces a field name to compare spellings: "Total_Active-Users"
// and "totalActiveUsers" fold alike.
func fold(s string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
}

// unknown reports the unknown field k, suggesting the known one it looks
// like (suggest) or listing them all.
func (d *fileDecoder) unknown(k *node, path string, known map[string]decodeFunc) error {
	names := make([]string, 0, len(known))
	for name := range known {
		names = append(names, name)
	}
	slices.Sort(names)
	if name := suggest(k.value, names); name != "" {
		return d.errorf(k, path, "unknown field; did you mean %s?", name)
	}
	return d.errorf(k, path, "unknown field; known fields are %s", strings.Join(names, ", "))
}

// suggest returns the name among names that field is most likely a
// misspelling of, or "" if none is close: the one that folds alike
// ("total_active_users" for "totalActiveUsers"), else the one nearest in
// edit distance once folded, if there is a single nearest one and it is
// at most a third of the field's length away (at least 1, at most 3): a
// letter missing, added, changed or two swapped
// ("totalActiveUser", "negotiateLangauge").
func suggest(field string, names []string) string {
	f := fold(field)
	limit := min(max(len(f)/3, 1), 3)
	best, bestDist, ties := "", limit+1, 0
	for _, name := range names {
		dist := editDistance(f, fold(name))
		switch {
		case dist == 0:
			return name
		case dist < bestDist:
			best, bestDist, ties = name, dist, 0
		case dist == bestDist:
			ties++
		}
	}
	if ties > 0 {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// the fewest bytes inserted, deleted or changed, or adjacent bytes
// swapped, that turn a into b.
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// secretFields are fields that would hold a secret, by folded name, and
// where that secret is given instead.
var secretFields = map[string]string{
	"key":        "the cookie keys come only from -key, WAITINGROOM_KEY or WAITINGROOM_KEYS",
	"keys":       "the cookie keys come only from -key, WAITINGROOM_KEY or WAITINGROOM_KEYS",
	"cookiekey":  "the cookie keys come only from -key, WAITINGROOM_KEY or WAITINGROOM_KEYS",
	"cookiekeys": "the cookie keys come only from -key, WAITINGROOM_KEY or WAITINGROOM_KEYS",
	"admintoken": "the admin token comes only from -admin-token or WAITINGROOM_ADMIN_TOKEN",
	"passsecret": "the pass secret comes only from WAITINGROOM_PASS_SECRET",
	"secret":     "the pass secret comes only from WAITINGROOM_PASS_SECRET",
	"token":      "the admin token comes only from -admin-token or WAITINGROOM_ADMIN_TOKEN",
}

// settings decodes the top-level mapping.
func (d *fileDecoder) settings(root *node) ([]fileValue, error) {
	for _, k := range root.keys {
		if where, ok := secretFields[fold(k.value)]; ok {
			return nil, d.errorf(k, k.value, "secrets are never read from a config file: %s", where)
		}
	}
	var vals []fileValue
	// byFlag is the decoder of a setting a flag also gives; fileOnly is
	// that of a setting only the file has.
	byFlag := func(id string, dec func(n *node, path string) (func(*options), error)) decodeFunc {
		return func(n *node, path string) error {
			set, err := dec(n, path)
			if err == nil {
				vals = append(vals, fileValue{id: id, flag: true, where: d.at(n, path), set: set})
			}
			return err
		}
	}
	fileOnly := func(dec func(n *node, path string) (func(*options), error)) decodeFunc {
		return func(n *node, path string) error {
			set, err := dec(n, path)
			if err == nil {
				vals = append(vals, fileValue{id: path, where: d.at(n, path), set: set})
			}
			return err
		}
	}
	str, integer, boolean, duration := d.str, d.integer, d.boolean, d.duration
	err := d.fields(root, "", map[string]decodeFunc{
		"listen":             byFlag("listen", setter(str, func(o *options) *string { return &o.listen })),
		"upstream":           byFlag("upstream", setter(str, func(o *options) *string { return &o.upstream })),
		"demo":               byFlag("demo", setter(boolean, func(o *options) *bool { return &o.demo })),
		"forwardAuth":        byFlag("forward-auth", setter(boolean, func(o *options) *bool { return &o.forwardAuth })),
		"frontDoor":          byFlag("front-door", setter(str, func(o *options) *string { return &o.frontDoor })),
		"name":               byFlag("name", setter(str, func(o *options) *string { return &o.name })),
		"totalActiveUsers":   byFlag("total-active-users", setter(integer, func(o *options) *int { return &o.total })),
		"newUsersPerMinute":  byFlag("new-users-per-minute", setter(integer, func(o *options) *int { return &o.perMinute })),
		"sessionDuration":    byFlag("session-duration", setter(duration, func(o *options) *time.Duration { return &o.session })),
		"queueingMethod":     byFlag("queueing-method", setter(str, func(o *options) *string { return &o.method })),
		"refreshInterval":    byFlag("refresh-interval", setter(duration, func(o *options) *time.Duration { return &o.refresh })),
		"queueingStatusCode": byFlag("queueing-status-code", setter(integer, func(o *options) *int { return &o.statusCode })),
		"syncInterval":       byFlag("sync-interval", setter(duration, func(o *options) *time.Duration { return &o.syncInterval })),
		"healthPath":         byFlag("health-path", setter(str, func(o *options) *string { return &o.healthPath })),
		"lotteryPath":        byFlag("lottery-path", setter(str, func(o *options) *string { return &o.lotteryPath })),
		"adminListen":        byFlag("admin-listen", setter(str, func(o *options) *string { return &o.adminListen })),
		"store":              byFlag("store", setter(str, func(o *options) *string { return &o.storeURL })),
		"storePrefix":        byFlag("store-prefix", setter(str, func(o *options) *string { return &o.storeOpts.prefix })),
		"storeTable":         byFlag("store-table", setter(str, func(o *options) *string { return &o.storeOpts.table })),
		"createSchema":       byFlag("create-schema", setter(boolean, func(o *options) *bool { return &o.storeOpts.createSchema })),
		"https":              byFlag("https", setter(boolean, func(o *options) *bool { return &o.https })),
		"host":               byFlag("host", setter(str, func(o *options) *string { return &o.host })),
		"template":           byFlag("template", setter(d.path, func(o *options) *string { return &o.templatePath })),
		"readHeaderTimeout":  byFlag("read-header-timeout", setter(duration, func(o *options) *time.Duration { return &o.limits.readHeader })),
		"idleTimeout":        byFlag("idle-timeout", setter(duration, func(o *options) *time.Duration { return &o.limits.idle })),
		"bodyTimeout":        byFlag("body-timeout", setter(duration, func(o *options) *time.Duration { return &o.limits.body })),
		"readTimeout":        byFlag("read-timeout", setter(duration, func(o *options) *time.Duration { return &o.limits.read })),
		"maxHeaderBytes":     byFlag("max-header-bytes", setter(integer, func(o *options) *int { return &o.limits.maxHeaderBytes })),
		"language":           fileOnly(setter(str, func(o *options) *string { return &o.language })),
		"negotiateLanguage":  byFlag("negotiate-language", setter(boolean, func(o *options) *bool { return &o.negotiateLanguage })),
		"cookieDomain":       fileOnly(setter(str, func(o *options) *string { return &o.cookieDomain })),
		"cookiePath":         fileOnly(setter(str, func(o *options) *string { return &o.cookiePath })),
		"queueHold":          fileOnly(setter(duration, func(o *options) *time.Duration { return &o.queueHold })),
		"passDuration":       byFlag("pass-duration", setter(duration, func(o *options) *time.Duration { return &o.passDuration })),
		"trustedProxies":     byFlag("trusted-proxies", setter(d.networks, func(o *options) *[]netip.Prefix { return &o.trustedProxies })),
		"bypass":             fileOnly(setter(d.rules, func(o *options) *[]waitingroom.Rule { return &o.bypass })),
		"events":             fileOnly(setter(d.events, func(o *options) *[]waitingroom.Event { return &o.events })),
	})
	if err != nil {
		return nil, err
	}
	return vals, nil
}

// setter decodes a value with get and returns what stores it in the
// options field that field points to.
func setter[T any](get func(*node, string) (T, error), field func(*options) *T) func(*node, string) (func(*options), error) {
	return func(n *node, path string) (func(*options), error) {
		v, err := get(n, path)
		if err != nil {
			return nil, err
		}
		return func(o *options) { *field(o) = v }, nil
	}
}

// into decodes a value with get into *dst.
func into[T any](dst *T, get func(*node, string) (T, error)) decodeFunc {
	return func(n *node, path string) error {
		v, err := get(n, path)
		if err == nil {
			*dst = v
		}
		return err
	}
}
