# bash completion of strata: its subcommands, each subcommand's flags (read from its --help, so
# they never go stale), pulled model names after -m, and file names for everything else. Installed by `make install` into
# bash-completion's completions folder; needs the bash-completion package's helpers.
_strata() {
  local cur prev words cword
  _init_completion || return
  if ((cword == 1)); then
    local subcommands
    subcommands=$("${words[0]}" --help 2> /dev/null |
      awk '/^Subcommands:/ { on = 1; next } on && NF { print $1 }')
    mapfile -t COMPREPLY < <(compgen -W "$subcommands --help --version" -- "$cur")
    return
  fi
  case $prev in
    -m | --model)  # files, and the names strata pull fetched
      _filedir
      mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -W \
        "$("${words[0]}" list 2> /dev/null | awk '{ print $1 }')" -- "$cur")
      return
      ;;
    -f | --file | -o | --output | --vocab | --draft | --grammar | --json-schema | \
      --chat-template | --chat-template-file | --kv-cache-dir | --imatrix)
      _filedir
      return
      ;;
  esac
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_parse_help "${words[0]}" "${words[1]} --help")" -- "$cur")
    return
  fi
  _filedir
}
complete -F _strata strata
