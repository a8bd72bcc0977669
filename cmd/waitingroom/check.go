package main

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/cmd/waitingroom/internal/demoapp"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
	"github.com/go-waitingroom/waitingroom/template"
)

// check validates the settings, whether they came from flags or from the
// file, and works out what follows from them. set holds the flags given
// on the command line or in the file.
func (o *options) check(set map[string]bool) error {
	if err := o.checkMode(); err != nil {
		return err
	}
	if err := o.checkFrontDoor(set); err != nil {
		return err
	}
	if err := o.checkUpstream(set); err != nil {
		return err
	}
	if err := o.checkAddresses(); err != nil {
		return err
	}
	if o.syncInterval <= 0 {
		return usage("%s must be > 0, got %v", o.label("sync-interval"), o.syncInterval)
	}
	if err := o.checkLimits(); err != nil {
		return err
	}
	if err := o.checkAdmin(); err != nil {
		return err
	}
	if err := o.checkPass(set); err != nil {
		return err
	}
	if err := o.checkPaths(); err != nil {
		return err
	}
	if err := o.checkStore(set); err != nil {
		return err
	}
	if err := o.readTemplate(); err != nil {
		return err
	}
	return o.checkRoom(set)
}

// checkPaths checks the paths served outside the room: each starts with
// /, and the lottery's is neither the health check's nor the demo's
// report, which would hide it.
func (o *options) checkPaths() error {
	for _, p := range []struct{ id, path string }{{"health-path", o.healthPath}, {"lottery-path", o.lotteryPath}} {
		if p.path != "" && !strings.HasPrefix(p.path, "/") {
			return usage("%s %q must start with /", o.label(p.id), p.path)
		}
	}
	switch {
	case o.lotteryPath != "" && o.lotteryPath == o.healthPath:
		return usage("%s and %s are both %q: give them different paths", o.label("lottery-path"), o.label("health-path"), o.lotteryPath)
	case o.demo && o.lotteryPath == demoapp.ActivePath:
		return usage("%s %q is the demo's report of its sessions: give another path", o.label("lottery-path"), o.lotteryPath)
	}
	return nil
}

// checkMode checks that exactly one of -upstream, -demo and -forward-auth
// is given.
func (o *options) checkMode() error {
	modes := 0
	for _, on := range []bool{o.demo, o.upstream != "", o.forwardAuth} {
		if on {
			modes++
		}
	}
	if modes != 1 {
		if modes > 1 {
			var given []string
			for _, m := range []struct {
				id string
				on bool
			}{{"upstream", o.upstream != ""}, {"demo", o.demo}, {"forward-auth", o.forwardAuth}} {
				if m.on {
					given = append(given, o.label(m.id))
				}
			}
			if len(given) == 2 {
				return usage("give exactly one of %s and %s, not both", given[0], given[1])
			}
			return usage("give exactly one of %s, not all three", strings.Join(given, ", "))
		}
		return usage("give exactly one of -upstream URL, -demo and -forward-auth (or upstream, demo or forwardAuth in a config file)")
	}
	return nil
}

// checkFrontDoor checks -front-door: -forward-auth needs it, and nothing
// else takes it.
func (o *options) checkFrontDoor(set map[string]bool) error {
	switch _, ok := frontDoors[o.frontDoor]; {
	case o.forwardAuth && o.frontDoor == "":
		return usage("%s needs -front-door (frontDoor in a config file), the server in front: %s", o.label("forward-auth"), strings.Join(frontDoorNames, ", "))
	case o.forwardAuth && !ok:
		return usage("%s %q: want one of %s", o.label("front-door"), o.frontDoor, strings.Join(frontDoorNames, ", "))
	case !o.forwardAuth && set["front-door"]:
		return usage("%s applies to -forward-auth only", o.label("front-door"))
	}
	return nil
}

// checkUpstream checks -upstream, which it parses into upstreamURL, and
// -host, which applies to an upstream only.
func (o *options) checkUpstream(set map[string]bool) error {
	if o.upstream != "" {
		u, err := url.Parse(o.upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usage("%s %q is not an http(s) URL", o.label("upstream"), o.upstream)
		}
		o.upstreamURL = u
	}
	switch {
	case o.host != hostOriginal && o.host != hostUpstream:
		return usage("%s %q: want %s or %s", o.label("host"), o.host, hostOriginal, hostUpstream)
	case o.upstream == "" && set["host"]:
		return usage("%s applies to an upstream only, not to -demo or -forward-auth", o.label("host"))
	}
	return nil
}

// checkAddresses checks that -listen and -admin-listen are host:port
// addresses: one that is not is a usage error, where one that cannot be
// listened on (taken, not this host's) fails when the proxy starts.
func (o *options) checkAddresses() error {
	for _, a := range []struct{ id, addr string }{{"listen", o.listen}, {"admin-listen", o.adminListen}} {
		if a.addr == "" && a.id == "admin-listen" {
			continue
		}
		_, port, err := net.SplitHostPort(a.addr)
		if err == nil {
			_, err = net.LookupPort("tcp", port)
		}
		if err != nil {
			return usage("%s %q: want host:port, such as 127.0.0.1:8080 or :8080: %v", o.label(a.id), a.addr, err)
		}
	}
	return nil
}

// checkAdmin takes the admin token from $WAITINGROOM_ADMIN_TOKEN when
// -admin-token is not given, and refuses -admin-listen without a token or
// with one that admin.BearerToken refuses (too short, not printable
// ASCII), never showing the token.
func (o *options) checkAdmin() error {
	from := "-admin-token"
	if o.adminToken == "" {
		o.adminToken = os.Getenv("WAITINGROOM_ADMIN_TOKEN")
		from = "WAITINGROOM_ADMIN_TOKEN"
	}
	if o.adminListen == "" {
		return nil
	}
	if o.adminToken == "" {
		return usage("%s needs -admin-token or WAITINGROOM_ADMIN_TOKEN: the admin API never runs without authentication", o.label("admin-listen"))
	}
	if _, err := admin.BearerToken(o.adminToken); err != nil {
		return usage("%s (for %s): %s", from, o.label("admin-listen"), reason(err))
	}
	return nil
}

// checkPass takes the pass secret from $WAITINGROOM_PASS_SECRET and checks
// it with -pass-duration; passes are for -forward-auth only.
func (o *options) checkPass(set map[string]bool) error {
	o.passSecret = os.Getenv("WAITINGROOM_PASS_SECRET")
	switch {
	case o.passSecret != "" && !o.forwardAuth:
		return usage("WAITINGROOM_PASS_SECRET is for -forward-auth: only a server in front can check a pass")
	case o.passSecret == "" && set["pass-duration"]:
		return usage("%s needs WAITINGROOM_PASS_SECRET, the secret of nginx's secure_link_md5", o.label("pass-duration"))
	}
	if err := o.pass().Validate(); err != nil {
		return usage("%s or WAITINGROOM_PASS_SECRET: %s", o.label("pass-duration"), reason(err))
	}
	return nil
}

// checkStore parses the store URL (-store or the file's store, else
// $WAITINGROOM_STORE, else memory) into store, checks the flags that apply
// to some stores only, and works out the default of -create-schema.
func (o *options) checkStore(set map[string]bool) error {
	storeLabel := o.label("store")
	if !set["store"] {
		storeLabel = "WAITINGROOM_STORE"
		if o.storeURL = os.Getenv("WAITINGROOM_STORE"); o.storeURL == "" {
			o.storeURL = string(kindMemory)
		}
	}
	var err error
	if o.store, err = parseStore(storeLabel, o.storeURL); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if set["store-prefix"] && o.store.kind != kindRedis {
		return usage("%s applies to Redis stores only", o.label("store-prefix"))
	}
	for _, id := range []string{"store-table", "create-schema"} {
		if set[id] && !o.store.sql() {
			return usage("%s: -store-table and -create-schema apply to SQL stores only", o.label(id))
		}
	}
	if o.store.sql() && sqlstore.Schema(o.store.dialect(), o.storeOpts.table) == "" {
		return usage("%s %q is not a plain identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63)", o.label("store-table"), o.storeOpts.table)
	}
	if !set["create-schema"] {
		o.storeOpts.createSchema = o.store.kind == kindSQLite
	}
	return nil
}

// readTemplate reads the waiting page of -template, if given, into
// template, and checks that it parses.
func (o *options) readTemplate() error {
	if o.templatePath != "" {
		src, err := readLimited(o.templatePath)
		if err != nil {
			return usage("%s: %v", o.label("template"), err)
		}
		if _, err := template.Parse(string(src)); err != nil {
			return usage("%s %s does not parse: %v", o.label("template"), o.templatePath, err)
		}
		o.template = string(src)
	}
	return nil
}

// checkLimits checks the connection limits.
func (o *options) checkLimits() error {
	for _, c := range []struct {
		id string
		d  time.Duration
		// why 0 is refused; "" if 0 means none
		why string
	}{
		{"read-header-timeout", o.limits.readHeader, "a client that never finishes its headers would hold its connection for ever"},
		{"idle-timeout", o.limits.idle, "an idle keep-alive connection would stay open for ever"},
		{"body-timeout", o.limits.body, ""},
		{"read-timeout", o.limits.read, ""},
	} {
		switch {
		case c.why != "" && c.d <= 0:
			return usage("%s must be > 0, got %v: %s", o.label(c.id), c.d, c.why)
		case c.d < 0:
			return usage("%s must be ≥ 0 (0 for none), got %v", o.label(c.id), c.d)
		}
	}
	if o.limits.maxHeaderBytes <= 0 {
		return usage("%s must be > 0, got %d", o.label("max-header-bytes"), o.limits.maxHeaderBytes)
	}
	return nil
}

// checkRoom checks the room's settings one by one, so that an error names
// the flag or the field of the file at fault, and then the two that
// depend on each other. set holds the flags given on the command line or
// in the file.
func (o *options) checkRoom(set map[string]bool) error {
	for _, c := range []struct {
		id  string
		set func(*waitingroom.Config)
	}{
		{"name", func(c *waitingroom.Config) { c.Name = o.name }},
		{"total-active-users", func(c *waitingroom.Config) { c.TotalActiveUsers = o.total }},
		{"new-users-per-minute", func(c *waitingroom.Config) { c.NewUsersPerMinute = o.perMinute }},
		{"session-duration", func(c *waitingroom.Config) { c.SessionDuration = o.session }},
		{"queueing-method", func(c *waitingroom.Config) { c.QueueingMethod = o.queueingMethod() }},
		{"refresh-interval", func(c *waitingroom.Config) { c.RefreshInterval = o.refresh }},
		{"queueing-status-code", func(c *waitingroom.Config) { c.QueueingStatusCode = o.statusCode }},
		{"language", func(c *waitingroom.Config) { c.Page.Language = o.language }},
		{"queueHold", func(c *waitingroom.Config) { c.QueueHold = o.queueHold }},
	} {
		if err := probe(c.set); err != nil {
			return usage("%s: %s", o.label(c.id), reason(err))
		}
	}
	// A limit given alone keeps the other at its default where that fits,
	// and otherwise moves it as far as the pair needs: -total-active-users
	// 100 alone lets in at most 100 a minute, -new-users-per-minute 500
	// alone lets 500 be active at once.
	switch {
	case set["total-active-users"] && !set["new-users-per-minute"]:
		o.perMinute = min(o.perMinute, o.total)
	case set["new-users-per-minute"] && !set["total-active-users"]:
		o.total = max(o.total, o.perMinute)
	}
	if o.perMinute > o.total {
		return usage("%s (%d) must not exceed %s (%d)", o.label("new-users-per-minute"), o.perMinute, o.label("total-active-users"), o.total)
	}
	refresh := cmp.Or(o.refresh, 20*time.Second)
	if hold := cmp.Or(o.queueHold, 5*time.Minute); hold < 2*refresh {
		if _, ok := o.from["queueHold"]; !ok {
			return usage("%s (%v) is more than half the default queue hold (%v): set queueHold in a config file to at least twice it",
				o.label("refresh-interval"), refresh, hold)
		}
		return usage("%s (%v) must be at least twice %s (%v)", o.label("queueHold"), hold, o.label("refresh-interval"), refresh)
	}
	return nil
}
