// Command caddy is Caddy with its standard modules and the waitingroom
// handler directive (package wrcaddy): the binary xcaddy would build with
// --with github.com/go-waitingroom/waitingroom/wrcaddy.
//
//	go build -o caddy github.com/go-waitingroom/waitingroom/wrcaddy/cmd/caddy
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/go-waitingroom/waitingroom/wrcaddy"
)

func main() { caddycmd.Main() }
