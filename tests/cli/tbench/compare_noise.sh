# compare judges timed metrics against the spread of the runs: a new median inside the
# old run's [min, max] is noise, not a regression, even past the threshold; the same
# drop outside both runs' spreads is a regression (exit 1).
tbench compress --shape 32x64 --methods lossless --reps 3 --json a.json >/dev/null
$PY -c "
import json
d = json.load(open('a.json'))
for r in d['results']:
    for m in r['metrics'].values():
        if m.get('runs', 0) > 1:
            m['min'] = m['value'] * 0.5
            m['max'] = m['value'] * 1.5
json.dump(d, open('noisy.json', 'w'))
for r in d['results']:
    for m in r['metrics'].values():
        if m.get('runs', 0) > 1 and m.get('better') == 'higher':
            m['value'] *= 0.7
json.dump(d, open('noisy_slower.json', 'w'))
for r in d['results']:
    for m in r['metrics'].values():
        if m.get('runs', 0) > 1:
            m['min'] = m['max'] = m['value']
json.dump(d, open('tight_slower.json', 'w'))"
tbench compare noisy.json noisy_slower.json --threshold 5% | tail -1; echo "inside the spread: rc=$?"
tbench compare a.json tight_slower.json --threshold 5% >/dev/null; echo "outside both spreads: rc=$?"
