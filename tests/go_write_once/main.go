// Writers through etcd's own Go client (clientv3 3.4, Debian's golang-etcd-server-dev) while the
// caller's script stalls members' peer traffic: each writer has every endpoint and a short timeout
// per call, and puts values no other call writes (one key, or two keys in one Txn). Afterwards the
// whole history since the start is read back through a watch, and the program prints one JSON
// object: how many calls succeeded or failed (by error), how many written values appear at more than
// one revision (a write applied twice: the client re-sent a call whose first copy still applied),
// and how many acknowledged values are missing. tests/e2e/write_once_e2e.sh judges it.
//
// The operations each writer makes are drawn from a generator seeded by --seed and its index, so a
// run's load replays (the faults' timing does not).
//
// usage: write_once --endpoints a,b,c [--writers 12] [--keys 20] [--timeout 2s] [--duration 40s]
//
//	[--settle 5s] [--seed N]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/clientv3"
	"google.golang.org/grpc/status"
)

const prefix = "/write-once/"

type outcome struct {
	mu       sync.Mutex
	ok       int
	errors   map[string]int
	acked    []string // values whose call succeeded
	attempts int
}

func (o *outcome) record(value string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.attempts++
	if err == nil {
		o.ok++
		o.acked = append(o.acked, value)
		return
	}
	o.errors[describe(err)]++
}

// describe names an error by its gRPC code and message, as a client would see them.
func describe(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Code().String() + ": " + s.Message()
	}
	return err.Error()
}

func writer(id int, endpoints []string, keys int, timeout time.Duration, until time.Time, seed int64, out *outcome) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		out.record("", err)
		return
	}
	defer cli.Close()
	rng := rand.New(rand.NewSource(seed*1000 + int64(id)))
	for seq := 0; time.Now().Before(until); seq++ {
		value := fmt.Sprintf("w%d-%d", id, seq)
		key := fmt.Sprintf("%sk%02d", prefix, rng.Intn(keys))
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		if rng.Intn(5) == 0 {
			other := fmt.Sprintf("%sk%02d", prefix, rng.Intn(keys))
			for other == key {
				other = fmt.Sprintf("%sk%02d", prefix, rng.Intn(keys))
			}
			_, err = cli.Txn(ctx).Then(clientv3.OpPut(key, value), clientv3.OpPut(other, value)).Commit()
		} else {
			_, err = cli.Put(ctx, key, value)
		}
		cancel()
		out.record(value, err)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// history returns, for every value put under the prefix after `from`, the revisions it was put at.
func history(cli *clientv3.Client, from int64) (map[string][]int64, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	now, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return nil, 0, err
	}
	last := now.Header.Revision
	revisions := map[string][]int64{}
	if last <= from {
		return revisions, last, nil
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	events := cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(from+1))
	for {
		select {
		case resp, ok := <-events:
			if !ok {
				return nil, 0, fmt.Errorf("the history watch ended early")
			}
			if err := resp.Err(); err != nil {
				return nil, 0, err
			}
			for _, ev := range resp.Events {
				if ev.Type != clientv3.EventTypePut {
					continue
				}
				v := string(ev.Kv.Value)
				revs := revisions[v]
				if len(revs) == 0 || revs[len(revs)-1] != ev.Kv.ModRevision {
					revisions[v] = append(revs, ev.Kv.ModRevision)
				}
				if ev.Kv.ModRevision >= last {
					return revisions, last, nil
				}
			}
		case <-time.After(10 * time.Second):
			// Revisions up to `last` that are not puts under the prefix send nothing.
			return revisions, last, nil
		}
	}
}

func main() {
	endpoints := flag.String("endpoints", "", "comma-separated client endpoints")
	writers := flag.Int("writers", 12, "concurrent writers, each its own client")
	keys := flag.Int("keys", 20, "keys written")
	timeout := flag.Duration("timeout", 2*time.Second, "each call's timeout")
	duration := flag.Duration("duration", 40*time.Second, "how long to write")
	settle := flag.Duration("settle", 5*time.Second, "wait after writing before reading the history")
	seed := flag.Int64("seed", 1, "the writers' generator seed")
	flag.Parse()
	eps := strings.Split(*endpoints, ",")

	reader, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer reader.Close()
	var start int64
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := reader.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		cancel()
		if err == nil {
			start = resp.Header.Revision
			break
		}
		if attempt == 20 {
			fmt.Fprintln(os.Stderr, "no answer at the start:", err)
			os.Exit(1)
		}
		time.Sleep(500 * time.Millisecond)
	}

	out := &outcome{errors: map[string]int{}}
	until := time.Now().Add(*duration)
	var wg sync.WaitGroup
	for i := 0; i < *writers; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			writer(id, eps, *keys, *timeout, until, *seed, out)
		}(i)
	}
	wg.Wait()
	time.Sleep(*settle)

	revisions, last, err := history(reader, start)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading the history:", err)
		os.Exit(1)
	}
	twice := []string{}
	for v, revs := range revisions {
		if len(revs) > 1 {
			twice = append(twice, fmt.Sprintf("%s at %v", v, revs))
		}
	}
	sort.Strings(twice)
	missing := 0
	for _, v := range out.acked {
		if len(revisions[v]) == 0 {
			missing++
		}
	}
	shown := twice
	if len(shown) > 10 {
		shown = shown[:10]
	}
	json.NewEncoder(os.Stdout).Encode(map[string]interface{}{
		"calls":              out.attempts,
		"succeeded":          out.ok,
		"errors":             out.errors,
		"values_in_history":  len(revisions),
		"revisions":          []int64{start, last},
		"applied_twice":      len(twice),
		"applied_twice_some": shown,
		"acked_missing":      missing,
	})
}
