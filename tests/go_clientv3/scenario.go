// One scenario through etcd's own Go client (clientv3 3.4, Debian's golang-etcd-server-dev), printed
// as JSON: its concurrency package (sessions, Mutex, Election), the Lock and Election gRPC services
// through their generated Go clients, watches and leases. tests/e2e/go_clientv3_e2e.sh runs it
// against a fresh etcd 3.4 and a fresh Leasehold and compares the outputs, so the same calls in the
// same order must give the same revisions, values, events, leaders and errors. Lease ids, and keys
// that contain them, differ by nature and are not printed.
//
// usage: scenario host:port
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	"go.etcd.io/etcd/etcdserver/api/v3election/v3electionpb"
	"go.etcd.io/etcd/etcdserver/api/v3lock/v3lockpb"
)

var results = map[string]interface{}{}

// check records what fn returns, or "error: <message>".
func check(name string, fn func(ctx context.Context) (interface{}, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	value, err := fn(ctx)
	if err != nil {
		results[name] = "error: " + err.Error()
		return
	}
	results[name] = value
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// twoSessions opens two sessions (leases of 10 s kept alive), as two contenders would.
func twoSessions(cli *clientv3.Client) (*concurrency.Session, *concurrency.Session, error) {
	s1, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	if err != nil {
		return nil, nil, err
	}
	s2, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	if err != nil {
		s1.Close()
		return nil, nil, err
	}
	return s1, s2, nil
}

func main() {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{os.Args[1]}, DialTimeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cli.Close()

	check("mutex: exclusion, hand-over and fencing", func(ctx context.Context) (interface{}, error) {
		s1, s2, err := twoSessions(cli)
		if err != nil {
			return nil, err
		}
		defer s1.Close()
		defer s2.Close()
		m1, m2 := concurrency.NewMutex(s1, "/mutex/"), concurrency.NewMutex(s2, "/mutex/")
		if err := m1.Lock(ctx); err != nil {
			return nil, err
		}
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		blocked := m2.Lock(short)
		cancel()
		first, _ := cli.Get(ctx, m1.Key())
		// The holder's fenced write: a Txn guarded by the lock key's create_revision.
		fenced, _ := cli.Txn(ctx).If(m1.IsOwner()).Then(clientv3.OpPut("/mutex-guarded", "by m1")).Commit()
		acquired := make(chan error, 1)
		go func() { acquired <- m2.Lock(ctx) }()
		time.Sleep(200 * time.Millisecond)
		if err := m1.Unlock(ctx); err != nil {
			return nil, err
		}
		if err := <-acquired; err != nil {
			return nil, err
		}
		second, _ := cli.Get(ctx, m2.Key())
		// The old holder's write, as a paused holder would send it, is now refused.
		stale, _ := cli.Txn(ctx).If(m1.IsOwner()).Then(clientv3.OpPut("/mutex-guarded", "stale m1")).Commit()
		guarded, _ := cli.Get(ctx, "/mutex-guarded")
		err = m2.Unlock(ctx)
		return []interface{}{errText(blocked), fenced.Succeeded, stale.Succeeded, string(guarded.Kvs[0].Value),
			second.Kvs[0].CreateRevision > first.Kvs[0].CreateRevision, m2.Header().Revision - first.Header.Revision,
			errText(err)}, nil
	})

	check("election: campaign, proclaim, observe, resign", func(ctx context.Context) (interface{}, error) {
		s1, s2, err := twoSessions(cli)
		if err != nil {
			return nil, err
		}
		defer s1.Close()
		defer s2.Close()
		e1, e2 := concurrency.NewElection(s1, "/election/"), concurrency.NewElection(s2, "/election/")
		_, noLeader := e1.Leader(ctx)
		if err := e1.Campaign(ctx, "alpha"); err != nil {
			return nil, err
		}
		observeCtx, stopObserving := context.WithCancel(ctx)
		defer stopObserving()
		observed := e1.Observe(observeCtx)
		values := []string{}
		next := func() {
			select {
			case r := <-observed:
				values = append(values, string(r.Kvs[0].Value))
			case <-time.After(3 * time.Second):
				values = append(values, "nothing observed")
			}
		}
		next()
		elected := make(chan error, 1)
		go func() { elected <- e2.Campaign(ctx, "beta") }()
		time.Sleep(200 * time.Millisecond)
		if err := e1.Proclaim(ctx, "alpha-2"); err != nil {
			return nil, err
		}
		next()
		leader, _ := e2.Leader(ctx)
		if err := e1.Resign(ctx); err != nil {
			return nil, err
		}
		if err := <-elected; err != nil {
			return nil, err
		}
		next()
		if err := e2.Proclaim(ctx, "beta-2"); err != nil {
			return nil, err
		}
		next()
		after, _ := e1.Leader(ctx)
		return []interface{}{errText(noLeader), values, string(leader.Kvs[0].Value), string(after.Kvs[0].Value),
			errText(e1.Proclaim(ctx, "alpha-3")), errText(e2.Resign(ctx))}, nil
	})

	check("Lock service", func(ctx context.Context) (interface{}, error) {
		locks := v3lockpb.NewLockClient(cli.ActiveConnection())
		lease, err := cli.Grant(ctx, 10)
		if err != nil {
			return nil, err
		}
		held, err := locks.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("/lock-service"), Lease: int64(lease.ID)})
		if err != nil {
			return nil, err
		}
		owner, _ := cli.Get(ctx, string(held.Key))
		_, unlockErr := locks.Unlock(ctx, &v3lockpb.UnlockRequest{Key: held.Key})
		gone, _ := cli.Get(ctx, string(held.Key))
		_, missingLease := locks.Lock(ctx, &v3lockpb.LockRequest{Name: []byte("/lock-service"), Lease: 12345})
		cli.Revoke(ctx, lease.ID)
		return []interface{}{held.Header.Revision == owner.Kvs[0].CreateRevision, owner.Kvs[0].Lease == int64(lease.ID),
			errText(unlockErr), gone.Count, errText(missingLease)}, nil
	})

	check("Election service", func(ctx context.Context) (interface{}, error) {
		elections := v3electionpb.NewElectionClient(cli.ActiveConnection())
		_, noLeader := elections.Leader(ctx, &v3electionpb.LeaderRequest{Name: []byte("/election-service")})
		lease, err := cli.Grant(ctx, 10)
		if err != nil {
			return nil, err
		}
		won, err := elections.Campaign(ctx, &v3electionpb.CampaignRequest{Name: []byte("/election-service"), Lease: int64(lease.ID), Value: []byte("one")})
		if err != nil {
			return nil, err
		}
		_, proclaimErr := elections.Proclaim(ctx, &v3electionpb.ProclaimRequest{Leader: won.Leader, Value: []byte("two")})
		leader, _ := elections.Leader(ctx, &v3electionpb.LeaderRequest{Name: []byte("/election-service")})
		stranger := *won.Leader
		stranger.Rev++
		_, wrongLeader := elections.Proclaim(ctx, &v3electionpb.ProclaimRequest{Leader: &stranger, Value: []byte("three")})
		_, resignErr := elections.Resign(ctx, &v3electionpb.ResignRequest{Leader: won.Leader})
		_, afterResign := elections.Leader(ctx, &v3electionpb.LeaderRequest{Name: []byte("/election-service")})
		cli.Revoke(ctx, lease.ID)
		return []interface{}{errText(noLeader), string(won.Leader.Name), errText(proclaimErr), string(leader.Kv.Value),
			errText(wrongLeader), errText(resignErr), errText(afterResign)}, nil
	})

	check("watch: prefix with previous values, history, compaction", func(ctx context.Context) (interface{}, error) {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		live := cli.Watch(wctx, "/watch/", clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithCreatedNotify())
		<-live
		first, _ := cli.Put(ctx, "/watch/a", "1")
		cli.Put(ctx, "/watch/a", "2")
		cli.Delete(ctx, "/watch/a")
		events := [][]string{}
		for len(events) < 3 {
			select {
			case r := <-live:
				for _, e := range r.Events {
					prev := ""
					if e.PrevKv != nil {
						prev = string(e.PrevKv.Value)
					}
					events = append(events, []string{e.Type.String(), string(e.Kv.Key), string(e.Kv.Value), prev})
				}
			case <-time.After(3 * time.Second):
				return nil, fmt.Errorf("only %d events arrived", len(events))
			}
		}
		history := cli.Watch(wctx, "/watch/a", clientv3.WithRev(first.Header.Revision))
		replayed := (<-history).Events
		compactAt, _ := cli.Put(ctx, "/watch/b", "x")
		if _, err := cli.Compact(ctx, compactAt.Header.Revision); err != nil {
			return nil, err
		}
		compacted := <-cli.Watch(wctx, "/watch/a", clientv3.WithRev(first.Header.Revision))
		return []interface{}{events, len(replayed), compacted.CompactRevision - first.Header.Revision, errText(compacted.Err())}, nil
	})

	check("leases: keys, keep-alive, time to live, revoke", func(ctx context.Context) (interface{}, error) {
		lease, err := cli.Grant(ctx, 30)
		if err != nil {
			return nil, err
		}
		cli.Put(ctx, "/lease/b", "v", clientv3.WithLease(lease.ID))
		cli.Put(ctx, "/lease/a", "v", clientv3.WithLease(lease.ID))
		kept, err := cli.KeepAliveOnce(ctx, lease.ID)
		if err != nil {
			return nil, err
		}
		ttl, err := cli.TimeToLive(ctx, lease.ID, clientv3.WithAttachedKeys())
		if err != nil {
			return nil, err
		}
		keys := []string{}
		for _, k := range ttl.Keys {
			keys = append(keys, string(k))
		}
		sort.Strings(keys)
		listed, _ := cli.Leases(ctx)
		_, revokeErr := cli.Revoke(ctx, lease.ID)
		_, again := cli.Revoke(ctx, lease.ID)
		gone, _ := cli.Get(ctx, "/lease/", clientv3.WithPrefix())
		_, missing := cli.KeepAliveOnce(ctx, lease.ID)
		return []interface{}{kept.TTL, ttl.GrantedTTL, keys, len(listed.Leases), errText(revokeErr), errText(again),
			gone.Count, errText(missing)}, nil
	})

	out, _ := json.MarshalIndent(results, "", " ")
	fmt.Println(string(out))
}
