package main

import (
	"testing"

	"github.com/go-waitingroom/waitingroom/examples/internal/spectest"
)

func TestSpec(t *testing.T) {
	spectest.Run(t, newServer)
}
