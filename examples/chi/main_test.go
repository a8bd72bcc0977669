package main

import (
	"testing"

	"github.com/go-waitingroom/waitingroom/internal/spectest"
)

func TestSpec(t *testing.T) {
	spectest.Run(t, newServer)
}
