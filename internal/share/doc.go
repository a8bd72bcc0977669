// Package share is what the instances of a room share and how they share
// it: the shared state's algorithm, the sync protocol, and the request
// path's share of an instance.
package share
