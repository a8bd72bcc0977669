// Command simulate runs the experiment of the public write-up of the
// waiting room this library re-implements (10,000 visitors joining over 30
// minutes, a minute of browsing each) against real rooms on a virtual
// clock, first-in-first-out and random, and renders what the write-up
// showed: for each method a 30 × 30 heat map of arrival minute against
// wait, and a plot of every visitor's wait against their arrival.
//
// From the examples module:
//
//	go run ./simulate -out ../docs/img
//
// It writes heatmap-fifo.png, heatmap-random.png and wait-by-arrival.png,
// and, with -data, the write-up's JSON data files (fifo.json, random.json)
// with the simulator's figures. It prints the figures as it goes.
//
// With -bots 100 it runs the bot farm experiment of docs/bots.md instead
// (100 fresh bot identities a minute on top of the crowd), prints its
// table and writes bots.png.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/sim"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage, printed
		}
		fmt.Fprintln(os.Stderr, "simulate:", err)
		os.Exit(1)
	}
}

// run parses args, runs the experiment for both methods and writes the
// images (and data files) it asks for.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stdout)
	out := fs.String("out", "", "directory for the PNG images (default: docs/img of the repository around the working directory, else ./docs/img)")
	data := fs.String("data", "", "directory for the JSON data files; none when empty")
	visitors := fs.Int("visitors", sim.DefaultVisitors, "visitors in each run")
	seed := fs.Uint64("seed", 0, "seed of the runs")
	botsPerMinute := fs.Int("bots", 0, "run the bot farm experiment instead, with this many bot identities a minute, and write bots.png")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if *out == "" {
		*out = defaultOut()
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if *botsPerMinute > 0 {
		return runBots(ctx, *out, *visitors, *botsPerMinute, *seed, stdout)
	}

	var runs []methodRun
	for _, m := range []waitingroom.QueueingMethod{waitingroom.FIFO, waitingroom.Random} {
		o := sim.Experiment(m)
		o.Visitors, o.Seed = *visitors, *seed
		res, err := sim.Run(ctx, o)
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		report(stdout, m, res)
		if *data != "" {
			if err := writeData(filepath.Join(*data, string(m)+".json"), res); err != nil {
				return err
			}
		}
		runs = append(runs, methodRun{method: m, res: res})
	}
	for _, r := range runs {
		name := filepath.Join(*out, "heatmap-"+string(r.method)+".png")
		if err := writeHeatmap(name, r); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintln(stdout, "wrote", name)
	}
	name := filepath.Join(*out, "wait-by-arrival.png")
	if err := writeScatter(name, runs); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintln(stdout, "wrote", name)
	return nil
}

// methodRun is the result of one queueing method.
type methodRun struct {
	method waitingroom.QueueingMethod
	res    *sim.Result
}

// title is the method's name for people.
func (r methodRun) title() string {
	if r.method == waitingroom.FIFO {
		return "FIFO"
	}
	return "Random"
}

func report(w io.Writer, m waitingroom.QueueingMethod, res *sim.Result) {
	fmt.Fprintf(w, "%s: %d visitors let in over %.0f minutes, mean wait %.0fs\n",
		m, res.Admitted, res.DurationSeconds/60, res.MeanWaitSeconds)
	fmt.Fprintf(w, "  limits: at most %d a minute (limit %d), peak %d active (limit %d), utilization %.3f\n",
		res.MaxAdmittedPerMinute, res.NewUsersPerMinute, res.PeakActive, res.TotalActiveUsers, res.Utilization)
	fmt.Fprintf(w, "  order: Kendall tau %.4f (a perfect FIFO order scores %.4f); %d queued at minute %.0f: tau %.4f, chi-square p %.3f\n",
		res.KendallTau, res.KendallTauMax, res.CohortSize, res.CohortSeconds/60, res.CohortTau, res.ChiSquare.PValue)
	if e := res.EstimateError; e != nil {
		fmt.Fprintf(w, "  estimates: relative error median %.3f, 90th percentile %.3f (%d visitors)\n", e.Median, e.P90, e.N)
	}
	if c := res.Calibration; c != nil {
		fmt.Fprintf(w, "  estimates: let in within the shown P25 %.3f, P50 %.3f, P75 %.3f (%d visitors)\n",
			c.WithinP25, c.WithinP50, c.WithinP75, c.N)
	}
}

func writeData(name string, res *sim.Result) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := res.WriteJSON(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// libraryModule is the module path of the repository's root go.mod.
const libraryModule = "github.com/go-waitingroom/waitingroom"

// defaultOut is docs/img of the repository around the working directory,
// found by its go.mod, or docs/img in the working directory.
func defaultOut() string {
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join("docs", "img")
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modulePath(b) == libraryModule {
			return filepath.Join(dir, "docs", "img")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return filepath.Join("docs", "img")
		}
		dir = parent
	}
}

// modulePath returns the module path a go.mod declares.
func modulePath(gomod []byte) string {
	for line := range bytes.Lines(gomod) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(string(line)), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

var errNoData = errors.New("no visitor was let in")
