package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/forwardauth"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/template"
)

func (o *options) queueingMethod() waitingroom.QueueingMethod {
	return waitingroom.QueueingMethod(strings.ToLower(o.method))
}

// roomConfig is the room's Config.
func (o *options) roomConfig(keys [][]byte, log *slog.Logger) waitingroom.Config {
	return waitingroom.Config{
		Name: o.name,
		Settings: waitingroom.Settings{
			TotalActiveUsers:   o.total,
			NewUsersPerMinute:  o.perMinute,
			SessionDuration:    o.session,
			QueueingMethod:     o.queueingMethod(),
			Events:             o.events,
			QueueingStatusCode: o.statusCode,
			Template:           o.template,
		},
		RefreshInterval: o.refresh,
		QueueHold:       o.queueHold,
		Cookie:          waitingroom.CookieOptions{Secure: o.https, Domain: o.cookieDomain, Path: o.cookiePath},
		Keys:            keys,
		Page: template.Options{
			Language:          o.language,
			NegotiateLanguage: o.negotiateLanguage,
			LotteryRecords:    o.lotteryPath, // the page links to the records the public address serves
		},
		Bypass:         o.bypass,
		TrustedProxies: o.trustedProxies,
		SyncInterval:   o.syncInterval,
		Logger:         log,
	}
}

// forwardAuthOptions are the forward-auth handler's options: the server
// in front, and passes when there is a secret.
func (o *options) forwardAuthOptions() forwardauth.Options {
	return forwardauth.Options{FrontDoor: frontDoors[o.frontDoor], Pass: o.pass()}
}

// pass is the forward-auth handler's Pass: none without a secret.
func (o *options) pass() forwardauth.Pass {
	if o.passSecret == "" {
		return forwardauth.Pass{}
	}
	return forwardauth.Pass{Secret: o.passSecret, Duration: o.passDuration}
}

// withoutSync returns cfg with the background sync disabled, to validate it
// with a room that never runs.
func withoutSync(cfg waitingroom.Config) waitingroom.Config {
	cfg.SyncInterval = -1
	return cfg
}

// nopStore is a store that is never called: it only lets New validate a
// Config before the real store is opened.
type nopStore struct{}

func (nopStore) Update(context.Context, string, func(*store.State) error) error {
	return errors.New("nopStore: not a store")
}
func (nopStore) Close() error { return nil }

// probe reports whether a room accepts a Config in which set changed one
// setting of a Config that is valid and lenient towards every other
// setting (the widest limits, the shortest refresh, the longest hold), so
// that an error is about that setting alone.
func probe(set func(*waitingroom.Config)) error {
	c := waitingroom.Config{
		Name: "probe",
		Settings: waitingroom.Settings{
			TotalActiveUsers:  1<<31 - 1, // the largest limit a room takes
			NewUsersPerMinute: 1,
		},
		RefreshInterval: time.Second,
		QueueHold:       24 * time.Hour,
		Keys:            [][]byte{make([]byte, 32)},
		SyncInterval:    -1,
	}
	set(&c)
	room, err := waitingroom.New(c, nopStore{})
	if err != nil {
		return err
	}
	return room.Close()
}

// reason is a Config error (or a forwardauth.Options one) without the
// prefix every one of them has.
func reason(err error) string {
	for _, pkg := range []string{"waitingroom: ", "forwardauth: "} {
		if s, ok := strings.CutPrefix(err.Error(), pkg+waitingroom.ErrInvalidConfig.Error()+": "); ok {
			return s
		}
	}
	return err.Error()
}
