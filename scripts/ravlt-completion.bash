# bash completion for ravlt (installed as share/bash-completion/completions/ravlt).
# Everything is read from the help text at completion time, so it follows the binary that
# is installed: command names from `ravlt --help` (the lines under "commands:"), global
# options from its usage line and option lines, a command's options from `ravlt CMD --help` (lines that
# start with spaces then --option); a command whose help lists "ravlt CMD SUB ..." lines
# (ravlt eval coco / ade20k) completes SUB, then SUB's options from `ravlt CMD SUB --help`.
# Other words complete as file names.

_ravlt_help_cache=()  # "cmd<TAB>words" entries, filled on first use

_ravlt_words() {  # _ravlt_words BIN [CMD [SUB]]: the candidate words, cached per command
  local bin=$1 key=${2:-.} e
  [ -n "${3:-}" ] && key="$2 $3"
  for e in "${_ravlt_help_cache[@]}"; do
    [ "${e%%$'\t'*}" = "$key" ] && { printf '%s\n' "${e#*$'\t'}"; return; }
  done
  local words
  if [ "$key" = . ]; then
    words=$("$bin" --help 2>/dev/null | awk '
      /^usage:/ { for (i = 1; i <= NF; i++) if (match($i, /--[A-Za-z0-9][A-Za-z0-9-]*/)) opts = opts " " substr($i, RSTART, RLENGTH) }
      /^ +(-[A-Za-z0-9], )?--[A-Za-z0-9]/ { if (match($0, /--[A-Za-z0-9][A-Za-z0-9-]*/)) opts = opts " " substr($0, RSTART, RLENGTH) }
      /^commands:/ { on = 1; next }
      on && /^  [a-z]/ { cmds = cmds " " $1 }
      on && /^$/ { on = 0 }
      END { print cmds " --help --version" opts }' | tr ' ' '\n' | awk 'NF && !seen[$0]++' | tr '\n' ' ')
  else
    local help
    help=$("$bin" $key --help 2>/dev/null)
    words=$(printf '%s\n' "$help" | grep -oE "ravlt $key [a-z][a-z0-9-]*" | awk '{print $3}' | sort -u | tr '\n' ' ')
    words="$words $(printf '%s\n' "$help" | grep -oE '^[[:space:]]+(-[A-Za-z0-9], )?--[A-Za-z0-9][A-Za-z0-9-]*' |
      grep -oE -- '--[A-Za-z0-9-]+' | sort -u | tr '\n' ' ')"
    words="$words --help"
  fi
  _ravlt_help_cache+=("$key"$'\t'"$words")
  printf '%s\n' "$words"
}

_ravlt() {
  local cur=${COMP_WORDS[COMP_CWORD]} bin=${COMP_WORDS[0]} cmd= sub= i w
  command -v "$bin" > /dev/null 2>&1 || bin=ravlt
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    case $w in
      --threads) ((i++)) ;;
      -*) ;;
      *) if [ -z "$cmd" ]; then cmd=$w; continue; fi
         # a subcommand only when the command's help lists it (not an input file)
         [[ " $(_ravlt_words "$bin" "$cmd") " == *" $w "* ]] && sub=$w
         break ;;
    esac
  done
  COMPREPLY=()
  if [ -z "$cmd" ]; then
    local all=$(_ravlt_words "$bin")
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "$(printf '%s\n' $all | grep -- '^-')" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "$(printf '%s\n' $all | grep -v -- '^-')" -- "$cur"))
    fi
  else
    local all=$(_ravlt_words "$bin" "$cmd")
    if [ -z "$sub" ] && [[ $cur != -* ]]; then  # the command's subcommands, if it has some
      COMPREPLY=($(compgen -W "$(printf '%s\n' $all | grep -v -- '^-')" -- "$cur"))
    elif [[ $cur == -* ]]; then
      [ -n "$sub" ] && all=$(_ravlt_words "$bin" "$cmd" "$sub")
      COMPREPLY=($(compgen -W "$(printf '%s\n' $all | grep -- '^-')" -- "$cur"))
    fi
  fi
  # nothing matched (or an argument): complete file names (complete -o default)
}
complete -o default -F _ravlt ravlt
