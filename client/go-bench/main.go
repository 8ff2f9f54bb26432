// leasehold-go-bench: load on any etcd v3 server through etcd's own Go client (clientv3 3.4, from
// Debian's golang-etcd-server-dev), for the two workloads where the client's behaviour is most of
// the story: etcd's concurrency.Mutex handed over between contending sessions, exactly as
// `etcdctl lock` runs it, and one put fanned out to many watchers. It prints one JSON object in the
// shape leasehold-bench's --json uses, so scripts/compare-etcd.sh can tabulate both.
//
// Built by scripts/compare-etcd.sh --client go (GOPATH mode, Debian's Go packages only).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/bits"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	"google.golang.org/grpc/metadata"
)

// result is what one run reports; field names follow leasehold-bench's --json output.
type result struct {
	Workload   string           `json:"workload"`
	Ops        int64            `json:"ops"`
	Seconds    float64          `json:"seconds"`
	OpsPerSec  float64          `json:"ops_per_sec"`
	Errors     map[string]int64 `json:"errors"`
	LatencyUs  map[string]int64 `json:"latency_us"`
	Violations int64            `json:"violations"`          // lock-handover: exclusion or revision-order breaches
	Puts       int64            `json:"puts,omitempty"`      // watch-fanout: puts accepted
	Delivered  float64          `json:"delivered,omitempty"` // watch-fanout: share of puts sent × watchers received
	Responses  int64            `json:"responses,omitempty"` // watch-fanout: watch responses holding events (events ÷ this = batching)
	// watch-fanout with --server-pids: the server's CPU from the first put to the end, its
	// watchers' set-up left out.
	ServerCPUSeconds float64 `json:"server_cpu_s,omitempty"`
}

// serverCPU is the user and system time of the given processes so far, in seconds (Linux's
// /proc/PID/stat, in clock ticks of 1/100 s).
func serverCPU(pids []int) float64 {
	var ticks int64
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The command name may hold spaces: count fields from after its closing parenthesis.
		fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		if len(fields) > 12 {
			utime, _ := strconv.ParseInt(fields[11], 10, 64)
			stime, _ := strconv.ParseInt(fields[12], 10, 64)
			ticks += utime + stime
		}
	}
	return float64(ticks) / 100
}

// recorder collects latencies and error counts from many goroutines.
type recorder struct {
	mu        sync.Mutex
	latencies []time.Duration
	errors    map[string]int64
}

func (r *recorder) ok(d time.Duration) {
	r.mu.Lock()
	r.latencies = append(r.latencies, d)
	r.mu.Unlock()
}

func (r *recorder) fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	r.mu.Lock()
	r.errors[what]++
	r.mu.Unlock()
}

func (r *recorder) report(workload string, ops int64, elapsed time.Duration) result {
	r.mu.Lock()
	defer r.mu.Unlock()
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })
	at := func(p float64) int64 {
		if len(r.latencies) == 0 {
			return 0
		}
		return r.latencies[int(float64(len(r.latencies)-1)*p)].Microseconds()
	}
	return result{
		Workload:  workload,
		Ops:       ops,
		Seconds:   elapsed.Seconds(),
		OpsPerSec: float64(ops) / elapsed.Seconds(),
		Errors:    r.errors,
		LatencyUs: map[string]int64{"p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "p999": at(0.999), "max": at(1)},
	}
}

func dial(endpoint string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
}

// lockHandover: `clients` clients (one connection each, like separate etcdctl processes) take turns
// holding one lock. A cycle is what `etcdctl lock` does: a session lease, Lock, Unlock, and the
// session's close (revoking the lease). Mutual exclusion and the order of the holders' revisions
// are checked on every acquisition.
func lockHandover(endpoint string, clients int, duration time.Duration) result {
	rec := &recorder{errors: map[string]int64{}}
	var cycles, violations, lastRevision int64
	holder := int32(-1)
	start := time.Now()
	deadline := start.Add(duration)
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		cli, err := dial(endpoint)
		if err != nil {
			rec.fail("dial", err)
			continue
		}
		wg.Add(1)
		go func(id int32, cli *clientv3.Client) {
			defer wg.Done()
			defer cli.Close()
			for time.Now().Before(deadline) {
				began := time.Now()
				session, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
				if err != nil {
					rec.fail("session", err)
					return
				}
				mutex := concurrency.NewMutex(session, "go-bench-lock/")
				if err := mutex.Lock(context.Background()); err != nil {
					rec.fail("lock", err)
					session.Close()
					return
				}
				if !atomic.CompareAndSwapInt32(&holder, -1, id) {
					atomic.AddInt64(&violations, 1)
				}
				// Each acquisition happens at a later revision than the one before it.
				if rev := mutex.Header().Revision; rev <= atomic.SwapInt64(&lastRevision, rev) {
					atomic.AddInt64(&violations, 1)
				}
				atomic.StoreInt32(&holder, -1)
				if err := mutex.Unlock(context.Background()); err != nil {
					rec.fail("unlock", err)
				}
				if err := session.Close(); err != nil {
					rec.fail("session close", err)
				}
				atomic.AddInt64(&cycles, 1)
				rec.ok(time.Since(began))
			}
		}(int32(i), cli)
	}
	wg.Wait()
	r := rec.report("lock-handover", cycles, time.Since(start))
	r.Violations = violations
	return r
}

// histogram counts latencies in buckets of about 3% width (the top five bits of the microseconds
// below the leading one), so that millions of events a second can be recorded by many goroutines
// with one atomic add each.
type histogram struct{ counts [64 * 32]int64 }

func (h *histogram) add(d time.Duration) {
	us := d.Microseconds()
	if us < 1 {
		us = 1
	}
	top := bits.Len64(uint64(us)) - 1
	sub := int64(0)
	if top >= 5 {
		sub = (us >> (top - 5)) & 31
	} else {
		sub = (us << (5 - top)) & 31
	}
	atomic.AddInt64(&h.counts[top*32+int(sub)], 1)
}

// at returns the latency (µs, the bucket's upper bound) below which a fraction p of the samples lie.
func (h *histogram) at(p float64) int64 {
	var total int64
	for i := range h.counts {
		total += atomic.LoadInt64(&h.counts[i])
	}
	if total == 0 {
		return 0
	}
	want := int64(float64(total-1)*p) + 1
	var seen int64
	for i := range h.counts {
		seen += atomic.LoadInt64(&h.counts[i])
		if seen >= want {
			top, sub := uint(i/32), int64(i%32)
			if top >= 5 {
				return (32 + sub + 1) << (top - 5)
			}
			return (32 + sub + 1) >> (5 - top)
		}
	}
	return 0
}

// fanoutValue is a put's 32-byte value: its send time (Unix nanoseconds) in decimal, padded.
func fanoutValue() string {
	return fmt.Sprintf("%-32d", time.Now().UnixNano())
}

// watchFanout: `watchers` watchers of one prefix on `streams` gRPC streams spread over `conns`
// connections (clientv3 puts every watch of one client on one stream unless their contexts' metadata
// differ, so each stream gets its own metadata). Puts come from a client of their own: `writers`
// goroutines putting as fast as the server accepts, or, with writers 0, `rate` puts a second offered
// (each sent at its time, answered or not). Each value carries its send time; latency runs from a
// put's send to each watcher's receipt. After the writes stop the run waits up to `drain` for every
// event; events/s is what was delivered over the time from the first put to the last receipt.
func watchFanout(endpoint string, watchers, streams, conns, writers int, rate float64, duration, drain time.Duration, serverPids []int) result {
	rec := &recorder{errors: map[string]int64{}}
	var hist histogram
	clients := make([]*clientv3.Client, conns+1) // the last one writes
	for i := range clients {
		cli, err := dial(endpoint)
		if err != nil {
			rec.fail("dial", err)
			return rec.report("watch-fanout", 0, time.Second)
		}
		clients[i] = cli
		defer cli.Close()
	}
	writer := clients[conns]
	var events, responses, lastReceipt int64
	created := make(chan struct{}, watchers)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for w := 0; w < watchers; w++ {
		stream := w % streams
		wctx := metadata.AppendToOutgoingContext(ctx, "go-bench-stream", strconv.Itoa(stream))
		ch := clients[stream%conns].Watch(wctx, "go-bench-fanout/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
		go func() {
			for resp := range ch {
				if resp.Created {
					created <- struct{}{}
					continue
				}
				received := time.Now()
				for _, ev := range resp.Events {
					sent, err := strconv.ParseInt(strings.TrimSpace(string(ev.Kv.Value)), 10, 64)
					if err != nil {
						continue
					}
					hist.add(received.Sub(time.Unix(0, sent)))
				}
				atomic.AddInt64(&events, int64(len(resp.Events)))
				if len(resp.Events) > 0 {
					atomic.AddInt64(&responses, 1)
				}
				atomic.StoreInt64(&lastReceipt, received.UnixNano())
			}
		}()
	}
	for i := 0; i < watchers; i++ {
		<-created
	}
	cpuBefore := serverCPU(serverPids)
	start := time.Now()
	// A put whose answer was lost (a timeout) may still have been applied: events are expected for
	// every put sent, so one that never arrives counts as missing.
	var puts, sent int64
	put := func(key string) {
		atomic.AddInt64(&sent, 1)
		if _, err := writer.Put(context.Background(), key, fanoutValue()); err != nil {
			rec.fail("put", err)
			return
		}
		atomic.AddInt64(&puts, 1)
	}
	if writers > 0 {
		var wg sync.WaitGroup
		for i := 0; i < writers; i++ {
			wg.Add(1)
			go func(key string) {
				defer wg.Done()
				for time.Since(start) < duration {
					put(key)
				}
			}(fmt.Sprintf("go-bench-fanout/%d", i))
		}
		wg.Wait()
	} else {
		// Offered, not closed-loop: each put leaves at its time whether or not earlier ones were
		// answered, so a slow server does not lower the rate it is asked to carry.
		var wg sync.WaitGroup
		for p := 0; p < int(rate*duration.Seconds()); p++ {
			time.Sleep(time.Until(start.Add(time.Duration(float64(p) / rate * float64(time.Second)))))
			wg.Add(1)
			go func() {
				defer wg.Done()
				put("go-bench-fanout/key")
			}()
		}
		wg.Wait()
	}
	expected := atomic.LoadInt64(&sent) * int64(watchers)
	for wait := time.Now().Add(drain); atomic.LoadInt64(&events) < expected && time.Now().Before(wait); {
		time.Sleep(10 * time.Millisecond)
	}
	delivered := atomic.LoadInt64(&events)
	if missing := expected - delivered; missing > 0 {
		rec.fail("missing events", fmt.Errorf("%d of %d events never arrived within %v", missing, expected, drain))
	}
	span := time.Duration(atomic.LoadInt64(&lastReceipt) - start.UnixNano())
	if span <= 0 {
		span = time.Since(start)
	}
	r := rec.report("watch-fanout", delivered, span)
	if len(serverPids) > 0 {
		r.ServerCPUSeconds = serverCPU(serverPids) - cpuBefore
	}
	r.LatencyUs = map[string]int64{"p50": hist.at(0.5), "p90": hist.at(0.9), "p99": hist.at(0.99), "p999": hist.at(0.999), "max": hist.at(1)}
	r.Puts = atomic.LoadInt64(&puts)
	r.Responses = atomic.LoadInt64(&responses)
	if expected > 0 {
		r.Delivered = float64(delivered) / float64(expected)
	}
	return r
}

func main() {
	endpoint := flag.String("endpoint", "127.0.0.1:2379", "host:port of the server")
	clients := flag.Int("clients", 16, "lock-handover: contending clients")
	duration := flag.Duration("duration", 10*time.Second, "how long to run")
	watchers := flag.Int("watchers", 10000, "watch-fanout: watchers of the prefix")
	streams := flag.Int("streams", 10000, "watch-fanout: gRPC watch streams they share")
	conns := flag.Int("conns", 16, "watch-fanout: connections the streams share")
	rate := flag.Float64("rate", 1, "watch-fanout: puts per second (when --writers is 0)")
	writers := flag.Int("writers", 0, "watch-fanout: goroutines putting as fast as accepted (0: --rate)")
	drain := flag.Duration("drain", 15*time.Second, "watch-fanout: how long to wait for the last events once writes stop")
	pidList := flag.String("server-pids", "", "watch-fanout: the server's process ids (comma-separated), whose CPU to report")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: leasehold-go-bench lock-handover|watch-fanout [flags]")
		flag.PrintDefaults()
	}
	if len(os.Args) < 2 {
		flag.Usage()
		os.Exit(2)
	}
	workload := os.Args[1]
	flag.CommandLine.Parse(os.Args[2:])
	var serverPids []int
	for _, p := range strings.Split(*pidList, ",") {
		if pid, err := strconv.Atoi(strings.TrimSpace(p)); err == nil {
			serverPids = append(serverPids, pid)
		}
	}
	var r result
	switch workload {
	case "lock-handover":
		r = lockHandover(*endpoint, *clients, *duration)
	case "watch-fanout":
		r = watchFanout(*endpoint, *watchers, *streams, *conns, *writers, *rate, *duration, *drain, serverPids)
	default:
		flag.Usage()
		os.Exit(2)
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}
