package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/forwardauth"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
)

// options are the command's settings: its flags, and the config file.
type options struct {
	configPath                          string
	version                             bool
	listen, upstream, name, method, key string
	demo, https, forwardAuth            bool
	frontDoor                           string
	host                                string
	total, perMinute, statusCode        int
	session, refresh, syncInterval      time.Duration
	passDuration                        time.Duration
	passSecret                          string // $WAITINGROOM_PASS_SECRET
	healthPath, lotteryPath             string
	adminListen, adminToken             string
	storeURL                            string
	store                               storeSpec
	storeOpts                           storeOptions
	templatePath                        string
	limits                              connLimits

	// negotiateLanguage lets each visitor's Accept-Language choose the
	// page's language, language being the fallback (-negotiate-language,
	// on by default).
	negotiateLanguage bool

	// Settings only the config file gives.
	language                 string
	cookieDomain, cookiePath string
	queueHold                time.Duration
	trustedProxies           []netip.Prefix
	bypass                   []waitingroom.Rule
	events                   []waitingroom.Event

	// Worked out from the settings.
	upstreamURL *url.URL
	template    string // the waiting page's source, read from templatePath

	// from says where the settings that the config file gave are in it,
	// by flag name (or, for the settings only the file gives, by field).
	from map[string]string
}

// label names where a setting comes from, for messages: the flag
// ("-total-active-users") or the file's position and field
// ("room.yaml:4:20: totalActiveUsers").
func (o *options) label(id string) string {
	if w, ok := o.from[id]; ok {
		return w
	}
	return "-" + id
}

// errUsage marks errors in the command line or the config file: exit
// status 2.
var errUsage = errors.New("usage")

func usage(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// defaultLimit is the default of -total-active-users and
// -new-users-per-minute.
const defaultLimit = 200

// frontDoors are the values of -front-door, the servers in front, and
// the headers each describes the original request in.
var frontDoors = map[string]forwardauth.FrontDoor{
	"nginx":         forwardauth.Forwarded,
	"caddy":         forwardauth.Forwarded,
	"traefik":       forwardauth.Forwarded,
	"generic":       forwardauth.Forwarded,
	"ingress-nginx": forwardauth.IngressNginx,
	"envoy":         forwardauth.Envoy,
}

// frontDoorNames are the values of -front-door, for messages.
var frontDoorNames = []string{"nginx", "caddy", "traefik", "envoy", "ingress-nginx", "generic"}

// Values of -host.
const (
	hostOriginal = "original"
	hostUpstream = "upstream"
)

// newFlagSet returns the command's flags, which set o. The flag set
// prints nothing itself: parse and writeUsage do.
func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("waitingroom", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&o.configPath, "config", "", "JSON or YAML file of settings (.json, .yaml, .yml); flags given on the command line override it")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to serve on")
	fs.StringVar(&o.upstream, "upstream", "", "URL of the application to protect")
	fs.BoolVar(&o.demo, "demo", false, "serve a built-in demo application instead of an upstream")
	fs.BoolVar(&o.forwardAuth, "forward-auth", false, "answer the auth requests of a server in front of the application (nginx auth_request, Caddy forward_auth, Traefik, Envoy, ingress-nginx) instead of proxying to an upstream; needs -front-door")
	fs.StringVar(&o.frontDoor, "front-door", "", "with -forward-auth, the server in front, whose own headers describe the original request: "+strings.Join(frontDoorNames, ", ")+" (no default)")
	fs.DurationVar(&o.passDuration, "pass-duration", forwardauth.DefaultPassDuration, "with -forward-auth and $WAITINGROOM_PASS_SECRET: how long an admitted visitor's pass lasts, whole seconds, 1s to "+forwardauth.MaxPassDuration.String())
	fs.Var(prefixList{&o.trustedProxies}, "trusted-proxies", "comma-separated `networks` (CIDR) of the proxies in front, whose X-Forwarded-For (and, with -forward-auth, the headers of -front-door) is believed (default none)")
	fs.StringVar(&o.name, "name", "default", "room name (letters, digits, - and _)")
	fs.IntVar(&o.total, "total-active-users", defaultLimit, fmt.Sprintf("most visitors active at once, at most %d; given -new-users-per-minute alone, the default rises to it", 1<<31-1))
	fs.IntVar(&o.perMinute, "new-users-per-minute", defaultLimit, "most visitors let in per minute, at most -total-active-users; given -total-active-users alone, the default falls to it")
	fs.DurationVar(&o.session, "session-duration", 5*time.Minute, "how long an admitted visitor stays active after their latest request")
	fs.StringVar(&o.method, "queueing-method", "fifo", "fifo, random, passthrough or reject")
	fs.DurationVar(&o.refresh, "refresh-interval", 20*time.Second, "how often waiting visitors get a chance")
	fs.IntVar(&o.statusCode, "queueing-status-code", 200, "status of waiting responses: 200, 202 or 429")
	fs.StringVar(&o.key, "key", "", "cookie keys, comma-separated, hex or base64, ≥ 32 bytes each; the first encrypts (default $WAITINGROOM_KEYS or $WAITINGROOM_KEY)")
	fs.DurationVar(&o.syncInterval, "sync-interval", time.Second, "how often the room syncs with the store (> 0)")
	fs.StringVar(&o.healthPath, "health-path", "/healthz", `path answered with 200 "ok" outside the room ("" for none)`)
	fs.StringVar(&o.lotteryPath, "lottery-path", "", "path serving the lottery's public records (JSON; ?at= a time) outside the room, linked from the waiting page (default off)")
	fs.StringVar(&o.adminListen, "admin-listen", "", "address of the admin API, status page and /metrics (default off)")
	fs.StringVar(&o.adminToken, "admin-token", "", "bearer token for the admin address, ≥ 16 bytes (default $WAITINGROOM_ADMIN_TOKEN)")
	fs.StringVar(&o.storeURL, "store", "", "where the shared state lives: "+storeHelp+" (default: the config file's store, else $WAITINGROOM_STORE, else memory)")
	fs.StringVar(&o.storeOpts.prefix, "store-prefix", redisstore.DefaultKeyPrefix, "Redis key prefix")
	fs.StringVar(&o.storeOpts.table, "store-table", sqlstore.DefaultTable, "SQL table")
	fs.BoolVar(&o.storeOpts.createSchema, "create-schema", false, "create the SQL table if it does not exist (default true for sqlite, false otherwise)")
	fs.BoolVar(&o.https, "https", false, "visitors reach the site over HTTPS, even if TLS ends before this proxy: Secure, SameSite=None cookie; X-Forwarded-Proto: https")
	fs.StringVar(&o.host, "host", hostOriginal, "Host header sent upstream: original (the client's) or upstream (the upstream URL's)")
	fs.StringVar(&o.templatePath, "template", "", "Mustache file of the waiting page (default: the built-in page)")
	fs.BoolVar(&o.negotiateLanguage, "negotiate-language", true, "let each visitor's Accept-Language choose the language of the built-in page's texts among those it has, the config file's language (default en) being the fallback; -negotiate-language=false shows that language to everyone")
	fs.DurationVar(&o.limits.readHeader, "read-header-timeout", defaultReadHeaderTimeout, "the longest a client may take to send a request's headers; > 0")
	fs.DurationVar(&o.limits.idle, "idle-timeout", defaultIdleTimeout, "how long a keep-alive connection stays open waiting for its next request; > 0")
	fs.DurationVar(&o.limits.body, "body-timeout", defaultBodyTimeout, "the longest a request body may stall before the connection is closed (0: none); an upload that keeps moving is never cut off")
	fs.DurationVar(&o.limits.read, "read-timeout", 0, "the longest a whole request, body included, may take to arrive (0: none); it cuts off uploads that take longer")
	fs.IntVar(&o.limits.maxHeaderBytes, "max-header-bytes", defaultMaxHeaderBytes, "the most bytes of a request's line and headers, > 0; larger get 431")
	return fs
}

// usageHeader comes before the flags in the usage text.
const usageHeader = `Usage:
  waitingroom -upstream URL [flags]   put a waiting room in front of URL
  waitingroom -demo [flags]           the same, in front of a built-in demo application
  waitingroom -forward-auth -front-door SERVER [flags]
                                      the auth service of the server in front: nginx, caddy,
                                      traefik, envoy, ingress-nginx or generic
  waitingroom -config FILE [flags]    with the settings in a JSON or YAML file
  waitingroom verify -id ID [RECORD]  check a visitor's draws against the room's lottery record
                                      (waitingroom verify -h for its flags)

The cookie keys come from -key, $WAITINGROOM_KEYS or $WAITINGROOM_KEY
(hex or base64, 32+ random bytes each, the same on every instance).

Flags:
`

// writeUsage writes the usage text of -h: how to run the command and
// every flag with its default.
func writeUsage(w io.Writer) {
	fs := newFlagSet(&options{})
	fs.SetOutput(w)
	_, _ = io.WriteString(w, usageHeader)
	fs.PrintDefaults()
}

// flagError is an error in the flags themselves (an unknown flag, a value
// that does not parse), after which the usage is worth a look. It is a
// usage error.
type flagError struct{ err error }

func (e flagError) Error() string   { return errUsage.Error() + ": " + e.err.Error() }
func (e flagError) Unwrap() []error { return []error{errUsage, e.err} }

// errVersion is what parse returns after -version.
var errVersion = errors.New("version")

// parse reads the flags of args and the config file they name. With -h,
// -help or --help it writes the usage to stdout and returns flag.ErrHelp;
// with -version it writes the version to stdout and returns errVersion,
// reading no config file.
func parse(args []string, stdout io.Writer) (*options, error) {
	o := &options{from: map[string]string{}}
	fs := newFlagSet(o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeUsage(stdout)
			return nil, flag.ErrHelp
		}
		return nil, flagError{err}
	}
	if o.version {
		_, _ = io.WriteString(stdout, versionLine(debug.ReadBuildInfo())+"\n")
		return nil, errVersion
	}
	if fs.NArg() > 0 {
		return nil, usage("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.configPath != "" {
		vals, err := loadConfigFile(o.configPath)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		for _, v := range vals {
			if v.flag && set[v.id] {
				continue // the command line overrides the file
			}
			v.set(o)
			set[v.id] = true
			o.from[v.id] = v.where
		}
	}
	if err := o.check(set); err != nil {
		return nil, err
	}
	return o, nil
}

// prefixList is the value of -trusted-proxies: comma-separated networks.
type prefixList struct{ p *[]netip.Prefix }

func (l prefixList) String() string {
	if l.p == nil {
		return ""
	}
	s := make([]string, len(*l.p))
	for i, p := range *l.p {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func (l prefixList) Set(v string) error {
	var out []netip.Prefix
	for c := range strings.SplitSeq(v, ",") {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return fmt.Errorf("want networks such as 10.0.0.0/8,2001:db8::/32, got %q", c)
		}
		out = append(out, p)
	}
	*l.p = out
	return nil
}
