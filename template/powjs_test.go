package template

import (
	"crypto/sha256"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
)

// The worker's SHA-256 agrees with Go's: node runs it (skipped without
// node unless the services are required; the browser tests run it in
// Chromium).
func TestPowWorkerSolves(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		servicetest.Unavailable(t, servicetest.Program("node", "to run the proof-of-work worker"), err)
	}
	dir := t.TempDir()
	src := "var self={postMessage:function(m){console.log(m)}};\n" + powWorker + "\n"
	for _, p := range []string{"AAAAAAAAAAAAAAAAAAAAAA.1700000000.12", "x.1.8", strings.Repeat("y", 70) + ".2.10"} {
		src += "self.onmessage({data:" + strconv.Quote(p) + "});\n"
	}
	f := filepath.Join(dir, "w.js")
	require.NoError(t, os.WriteFile(f, []byte(src), 0o600))
	out, err := exec.Command(node, f).CombinedOutput()
	require.NoError(t, err, string(out))
	lines := strings.Fields(strings.TrimSpace(string(out)))
	require.Len(t, lines, 3)
	for _, a := range lines {
		parts := strings.Split(a, ".")
		d, _ := strconv.Atoi(parts[len(parts)-2])
		h := sha256.Sum256([]byte(a))
		z := 0
		for _, b := range h {
			if b != 0 {
				z += bits.LeadingZeros8(b)
				break
			}
			z += 8
		}
		require.GreaterOrEqual(t, z, d, a)
	}
}
