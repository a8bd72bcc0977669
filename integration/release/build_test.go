package release

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
)

// releasesDoc is the file whose table of releases names each release and
// the commit it was cut from, from this package's directory; docName, as
// messages name it.
const (
	releasesDoc = "../../docs/releasing.md"
	docName     = "docs/releasing.md"
)

// releaseRow is a row of that table: | vX.Y.Z | `commit` |
var releaseRow = regexp.MustCompile("(?m)^\\| *(v[0-9]+\\.[0-9]+\\.[0-9]+) *\\| *`?([0-9a-f]{40})`? *\\|")

// previousRelease returns the version and commit of the last row of the
// table of releases: the release the checkout must stay compatible with.
func previousRelease(t *testing.T) (version, commit string) {
	t.Helper()
	doc, err := os.ReadFile(releasesDoc)
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n## Releases\n")
	require.True(t, ok, "%s has no \"## Releases\" section", docName)
	section, _, _ = strings.Cut(section, "\n## ")
	rows := releaseRow.FindAllStringSubmatch(section, -1)
	require.NotEmpty(t, rows, "%s: the table of releases has no row | vX.Y.Z | `commit` | (40 hex digits)", docName)
	last := rows[len(rows)-1]
	return last[1], last[2]
}

// git runs git in dir and returns its trimmed standard output.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// unavailable skips the test, or fails it when the services are
// required, with msg.
func unavailable(t *testing.T, msg string) {
	t.Helper()
	if servicetest.Required() {
		t.Fatalf("%s (%s=1)", msg, servicetest.RequireEnv)
	}
	t.Skipf("skipping: %s; set %s=1 to make this a failure", msg, servicetest.RequireEnv)
}

// checkout returns the root of the git checkout holding this package,
// after checking that commit, cut as version, is in its history.
func checkout(t *testing.T, version, commit string) string {
	t.Helper()
	root, err := git(".", "rev-parse", "--show-toplevel")
	if err != nil {
		unavailable(t, fmt.Sprintf("this is not a git checkout, so %s (commit %s) cannot be built: %v", version, commit, err))
	}
	if _, err := git(root, "cat-file", "-e", commit+"^{commit}"); err != nil {
		unavailable(t, fmt.Sprintf("commit %s of %s (%s) is not in this clone (a shallow one?): fetch the history, git fetch --unshallow", commit, version, docName))
	}
	_, err = git(root, "merge-base", "--is-ancestor", commit, "HEAD")
	require.NoError(t, err, "%s names commit %s for %s: it must be in the history of the checkout", docName, commit, version)
	return root
}

// goTool returns the go command.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// buildArgs are the go build flags of both binaries: -trimpath, so that
// the build cache serves the old tree's packages from one run to the next
// although each run extracts it into another directory.
var buildArgs = []string{"build", "-trimpath", "-buildvcs=false"}

// buildCurrent builds cmd/waitingroom as it is in the checkout, in the
// workspace, into dir.
func buildCurrent(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "waitingroom-current")
	cmd := exec.Command(goTool(), append(buildArgs, "-o", bin, "github.com/go-waitingroom/waitingroom/cmd/waitingroom")...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build cmd/waitingroom:\n%s", out)
	return bin
}

// buildPrevious extracts the tree of commit from the repository at root
// into dir and builds its cmd/waitingroom there, in its own workspace
// (its go.work), from the module cache and the configured module proxy.
func buildPrevious(t *testing.T, root, commit, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "src")
	require.NoError(t, os.Mkdir(src, 0o755))
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	extract := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	require.NoError(t, err)
	extract.Stdin = pipe
	var aerr, xerr bytes.Buffer
	archive.Stderr, extract.Stderr = &aerr, &xerr
	require.NoError(t, extract.Start())
	require.NoError(t, archive.Run(), "git archive %s: %s", commit, aerr.String())
	require.NoError(t, extract.Wait(), "tar -x: %s", xerr.String())

	bin := filepath.Join(dir, "waitingroom-previous")
	cmd := exec.Command(goTool(), append(buildArgs, "-o", bin, ".")...)
	cmd.Dir = filepath.Join(src, "cmd", "waitingroom")
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(src, "go.work"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build cmd/waitingroom of commit %s:\n%s", commit, out)
	return bin
}
