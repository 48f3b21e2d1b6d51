// Package torture holds the torture test of the controller itself: it
// builds the faultbench binary, starts `faultbench run` on one of three
// small clusters — static nodes with an app-hang, a node-freeze and an
// app-crash; press with a link held down, a partition (both on the
// controller's faultnet proxies) and a communication fault through the
// nodes' control endpoint; a RAID-5 node with a sticky disk fault —
// interrupts (SIGINT, SIGTERM, SIGHUP) or kills (SIGKILL) it at a random
// moment — during start-up, warm-up, each fault, while closing the record,
// or during analysis and report writing — and checks what every user of
// the tool relies on after such a cut:
//
//   - no process of the run is left, running or stopped (the nodes, what
//     they started, and the reaper);
//   - the record is readable by `analyze`, `export --csv` and `report`,
//     and by Apache Arrow's Parquet reader, which shares no code with the
//     writer: every segment and the merged file, whose row counts and
//     column sums must agree with faultbench's own reading;
//   - the summary is marked incomplete (with a reason) when the cut came
//     before the run ended, and a run cut after it holds every arrival;
//   - a caught signal stops the run through its own shutdown (never
//     death by the signal);
//   - after SIGINT, SIGTERM or SIGHUP, the attempts recorded are the
//     arrivals scheduled up to the cut.
//
// `go test ./internal/torture` runs a fixed set of cuts (CI); set
// FAULTBENCH_TORTURE=N for N random cuts (seeds 1..N), e.g.
//
//	FAULTBENCH_TORTURE=40 go test -count=1 -timeout 60m ./internal/torture
//
// The package has no code outside its tests.
package torture
