# Concurrent adds of different files under one name, without --replace: in each round
# exactly one succeeds, the others exit 2 ("a different file is stored under this
# name"), and the store restores the winner's file. Adds of the same file as the one
# stored succeed alongside (a re-add).
for i in 1 2 3 4 5 6 7 8; do head -c 40000 /dev/urandom > f$i.bin; done
for round in 1 2 3 4; do
  pids=()
  for i in 1 2 3 4 5 6 7 8; do
    timeout 10 tcompress store add --store S f$i.bin --name m$round -q 2> err$i & pids+=($!)
  done
  ok=0 winner=
  for i in 1 2 3 4 5 6 7 8; do
    wait "${pids[$((i - 1))]}"; rc=$?
    if [ $rc -eq 0 ]; then ok=$((ok + 1)); winner=f$i.bin
    elif [ $rc -ne 2 ] || ! grep -q "a different file is stored under this name" err$i; then echo "add $i: rc=$rc"; cat err$i; fi
  done
  echo "round $round: $ok succeeded"
  [ -n "$winner" ] && tcompress store get --store S m$round -q | cmp - "$winner" && echo "round $round: the winner's file is stored"
  tcompress store add --store S "$winner" --name m$round -q; echo "round $round: re-add rc=$?"
done
tcompress store verify --store S -q; echo "verify rc=$?"
