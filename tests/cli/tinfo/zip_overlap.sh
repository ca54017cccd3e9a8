# Zip entries whose bytes overlap (a storage entry that also spans the next entry's
# local header and data, CRC-32 intact) are refused, as CPython's zipfile refuses them:
# overlapping entries let a small file claim any amount of data.
. "$TK_SRC/tests/cli/tinfo/bounded.bash"
hostile overlap o.pt
"$PY" -c "
import zipfile
try:
    zipfile.ZipFile('o.pt').read('a/data/0')
except zipfile.BadZipFile as e:
    print('zipfile:', str(e).split(':')[0])"
bounded tinfo o.pt
one_error_line tinfo
grep -o "overlapped entries (with 'a/data/1')" err.txt
