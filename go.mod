module github.com/go-waitingroom/waitingroom

go 1.25.0

require (
	github.com/cbroglie/mustache v1.4.2
	github.com/stretchr/testify v1.12.1
	golang.org/x/crypto v0.55.0
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
