# Sourced by the benchmark scripts: the order in which a round runs its peers.
#
# rotated SHIFT PEER...  prints the peers rotated by SHIFT, every other round backwards, so that
# no peer always runs right after the same one (the JVM's background work after a Netty run
# would otherwise always land on the same next peer).
rotated() {
  local shift=$1 list=() i n
  shift
  list=("$@")
  n=${#list[@]}
  for ((i = 0; i < n; i++)); do
    if ((shift % 2)); then
      printf '%s ' "${list[$(((shift - i + 2 * n) % n))]}"
    else
      printf '%s ' "${list[$(((i + shift) % n))]}"
    fi
  done
}
