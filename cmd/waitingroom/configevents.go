package main

import (
	"strings"

	"github.com/go-waitingroom/waitingroom"
)

// events decodes the list of scheduled events and checks each, and all of
// them together, as the room will.
func (d *fileDecoder) events(n *node, path string) ([]waitingroom.Event, error) {
	var events []waitingroom.Event
	err := d.list(n, path, func(it *node, p string) error {
		e, err := d.event(it, p)
		events = append(events, e)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := probe(func(c *waitingroom.Config) { c.Events = events }); err != nil {
		return nil, d.errorf(n, path, "%s", reason(err))
	}
	return events, nil
}

func (d *fileDecoder) event(n *node, path string) (waitingroom.Event, error) {
	var (
		e          waitingroom.Event
		method     string
		noRenewal  bool
		hasRenewal bool
	)
	err := d.fields(n, path, map[string]decodeFunc{
		"name":              into(&e.Name, d.str),
		"description":       into(&e.Description, d.str),
		"suspended":         into(&e.Suspended, d.boolean),
		"start":             into(&e.Start, d.instant),
		"end":               into(&e.End, d.instant),
		"prequeueStart":     into(&e.PrequeueStart, d.instant),
		"shuffleAtStart":    into(&e.ShuffleAtStart, d.boolean),
		"totalActiveUsers":  into(&e.TotalActiveUsers, d.integer),
		"newUsersPerMinute": into(&e.NewUsersPerMinute, d.integer),
		"sessionDuration":   into(&e.SessionDuration, d.duration),
		"disableSessionRenewal": func(n *node, path string) (err error) {
			noRenewal, err = d.boolean(n, path)
			hasRenewal = true
			return err
		},
		"queueingMethod": into(&method, d.str),
		"template": func(n *node, path string) error {
			file, err := d.path(n, path)
			if err != nil {
				return err
			}
			src, err := d.readFile(file)
			if err != nil {
				return d.errorf(n, path, "%v", err)
			}
			e.Template = string(src)
			return nil
		},
	})
	if err != nil {
		return e, err
	}
	if hasRenewal {
		e.DisableSessionRenewal = &noRenewal
	}
	e.QueueingMethod = waitingroom.QueueingMethod(strings.ToLower(method))
	if err := probe(func(c *waitingroom.Config) { c.Events = []waitingroom.Event{e} }); err != nil {
		return e, d.errorf(n, path, "%s", reason(err))
	}
	return e, nil
}
