package main

import (
	"os"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/go-waitingroom/waitingroom/internal/spectest"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	os.Exit(m.Run())
}

func TestSpec(t *testing.T) {
	spectest.Run(t, newServer)
}
