package mxlimit

import (
	"fmt"
	"net/netip"
	"testing"
)

// The workload of bench/c_api_bench.cc at 1k buckets per table, in every
// language alike: the built-in policies, tables of N buckets, N clients
// (client c at 2001:db8:CCCC:CC00::1 with user "@u<c>:example.org"), request
// i by client splitmix64(i) % N to one of eight targets chosen by the high
// half, one millisecond apart.
var benchTargets = [8][2]string{
	{"GET", "/_matrix/client/v3/sync?since=s72594_4483_1934&timeout=30000"},
	{"GET", "/_matrix/client/r0/sync?timeout=30000"},
	{"PUT", "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/send/m.room.message/m1712345678.1"},
	{"POST", "/_matrix/client/v3/rooms/!OGEhHVWSdvArJzumhm%3Amatrix.org/receipt/m.read/%24eventid123"},
	{"POST", "/_matrix/client/v3/keys/query"},
	{"GET", "/_matrix/client/v1/media/download/matrix.org/AbCdEfGh123"},
	{"PUT", "/_matrix/federation/v1/send/1712345678901"},
	{"GET", "/_matrix/client/v3/pushrules/"},
}

func splitmix64(i uint64) uint64 {
	z := i + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

type workload struct {
	limiter  *Limiter
	requests []Request
}

func newWorkload(tb testing.TB, n int) *workload {
	l, err := NewFromYAML(fmt.Sprintf("tables:\n  ip: { capacity: %d }\n  user: { capacity: %d }\n", n, n), "bench.yaml", nil)
	if err != nil {
		tb.Fatal(err)
	}
	w := &workload{limiter: l, requests: make([]Request, 1<<16)}
	users := make([]string, n)
	clients := make([]netip.Addr, n)
	for c := range users {
		users[c] = fmt.Sprintf("@u%d:example.org", c)
		clients[c] = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8,
			byte(c >> 16), byte(c >> 8), byte(c), 15: 1})
	}
	for i := range w.requests {
		x := splitmix64(uint64(i))
		c := int(x % uint64(n))
		t := benchTargets[(x>>32)%8]
		w.requests[i] = Request{Method: t[0], Target: t[1], Client: clients[c], UserID: users[c]}
	}
	return w
}

// run checks b.N requests of the workload, request i at i ms.
func (w *workload) run(b *testing.B) {
	for i := 0; i < b.N; i++ {
		r := &w.requests[i%len(w.requests)]
		r.Now = int64(i+1) * 1_000_000
		if _, err := w.limiter.Check(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheck1kBuckets(b *testing.B) {
	w := newWorkload(b, 1024)
	defer w.limiter.Close()
	b.ResetTimer()
	w.run(b)
}

// Prints the per-call cost (informational; go test -v shows it).
func TestPerCallCost(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	w := newWorkload(t, 1024)
	defer w.limiter.Close()
	r := testing.Benchmark(w.run)
	t.Logf("go: Limiter.Check %d ns/call, %d allocs/call over %d calls (1k buckets per table)",
		r.NsPerOp(), r.AllocsPerOp(), r.N)
}
