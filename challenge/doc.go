// Package challenge is a waiting room's challenge step: what a visitor must
// pass to take their place in the queue, so that each place costs a client
// something and a client that will not pay can be parked in an infinite
// queue (docs/bots.md in the repository).
//
// A Policy says who must pass the challenge, of which Kind, and what
// failing it does. It is a live setting of a room (waitingroom.Settings's
// and waitingroom.Event's Challenge); the room gives the challenge with the
// waiting page and looks at the answer at the visitor's next chance. Two
// kinds of challenge:
//
//   - PoW, the built-in proof of work: the page carries a puzzle, issued by
//     Puzzles and bound to the room, the visitor and the moment; the
//     visitor's browser solves it in a Web Worker, a Go client with Solve,
//     and the answer comes back in the Header request header (or the
//     page's challenge cookie). Checking an answer takes two hashes per key
//     and no state.
//   - Hosted, the widget of a hosted service (Cloudflare Turnstile,
//     hCaptcha or reCAPTCHA): the page carries the Verifier's Widget, and
//     the Verifier asks the provider's siteverify API about the token it
//     gives.
//
// The room's side of the step (when a chance is held for the challenge,
// parked or deferred, the claim that asks a hosted provider once per
// chance, and the challenge's state in the visitor's cookie) is the
// room's own: this package holds what a program configures, and the
// mechanics it relies on.
//
// A JSON client answers a proof of work this way:
//
//	// page.ChallengePuzzle is the "challengePuzzle" of the waiting JSON.
//	answer, err := challenge.Solve(ctx, page.ChallengePuzzle)
//	if err != nil {
//		return err
//	}
//	req.Header.Set(challenge.Header, answer) // with its next request
package challenge
