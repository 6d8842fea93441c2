# bash completion for trbox and its applets (trbox --completions bash)
_trbox() {
    local cur=${COMP_WORDS[COMP_CWORD]} app=${COMP_WORDS[0]##*/} first=1 opts i
    if [[ $app == trbox ]]; then
        if (( COMP_CWORD == 1 )); then
            COMPREPLY=($(compgen -W "tr-on tr-event tr-cat tr-graph tr-stack tr-lat --list --install -s --symlink -V --version --man --completions --help" -- "$cur"))
            return
        fi
        app=${COMP_WORDS[1]} first=2
    fi
    # After -- comes a command and its arguments.
    for (( i = first; i < COMP_CWORD; i++ )); do
        if [[ ${COMP_WORDS[i]} == -- ]]; then
            COMPREPLY=($(compgen -c -f -- "$cur"))
            return
        fi
    done
    case $app in
        tr-on) opts="--off --reset -b --buffer -S --subbuf -C --clock -O --option -l --func -n --notrace -P --pid -c --children -k --keep -t --time --json --dump-on-oops --boot --persist -T --tracefs -B --instance -v --verbose --kernel --wait --help" ;;
        tr-event) opts="-L --list --format -f --filter -R --trigger -P --pid -t --time -k --keep --json --kprobe --kretprobe --uprobe --uretprobe --boot --persist -T --tracefs -B --instance -v --verbose --kernel --wait --help" ;;
        tr-cat) opts="-o --output -m --max-kb --raw --follow -t --time --cpus -P --pid --comm -e --event --json --stats --all -j --jobs --console -N --net -i --input --from-console --listen --compression -T --tracefs -B --instance -v --verbose --kernel --wait --help" ;;
        tr-graph) opts="-d --depth -P --pid --min-us -t --time --folded --top --svg -i --input -r --read -k --keep --boot --persist -T --tracefs -B --instance -v --verbose --kernel --wait --help" ;;
        tr-stack) opts="-e --event -f --filter -l --func -P --pid --folded --reset --limit -t --time -i --input -k --keep -T --tracefs -B --instance -v --verbose --kernel --wait --help" ;;
        tr-lat) opts="--rt -P --pid --priority -t --time --hist --all --bucket -E --entries --ns --json --samples -p --period --cpus --irq-us --total-us --width --max -o --output -s --stack-us -u --user-threads -U --user-load --kernel-threads --on-threshold --on-end --warm-up --dma-latency --trace-buffer-size -H --house-keeping --aa-only --no-aa --dump-tasks --cgroup --deepest-idle-state -r --read -k --keep -T --tracefs -B --instance -v --verbose --kernel --wait --help" ;;
        *) return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _trbox trbox tr-on tr-event tr-cat tr-graph tr-stack tr-lat
