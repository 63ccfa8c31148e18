# help2roff.awk - one man page (roff, man macros) from one `mprof <command> --help` text.
#
# The help text is the one source of the command's documentation: `--help` prints it and this
# script turns it into a page, so the two cannot drift. The text follows a shape every command
# keeps: a "usage:" line (and its continuation lines), blocks separated by blank lines, a
# heading alone on a line ending with ':' ("Options:", "Formats:"), items indented two spaces
# with their description in a column, continuation lines indented deeper, and an "Exit
# status:" (or "Exit codes:") paragraph.
#
# Variables (-v): page (mprof-report), version, extra (a file of roff appended before SEE ALSO,
# or ""). From the environment, as -v would interpret their backslashes: MAN_TITLE (the NAME
# line's description), MAN_SEE_ALSO (the SEE ALSO line, already roff), MAN_DESCRIPTION (a
# paragraph of plain text that opens DESCRIPTION, or unset).

function esc(s) {
    gsub(/\\/, "\\e", s)
    gsub(/-/, "\\-", s)
    if (s ~ /^[.']/)
        s = "\\&" s
    return s
}

function indent_of(s,    i) {
    for (i = 1; substr(s, i, 1) == " "; i++)
        ;
    return i - 1
}

function trim(s) {
    sub(/^ +/, "", s)
    sub(/ +$/, "", s)
    return s
}

# Starts section name unless it is the one being written.
function section(name) {
    if (name != cur) {
        print ".SH " name
        cur = name
    }
    inpara = 0
}

function para() {
    if (!inpara)
        print ".PP"
    inpara = 1
}

# The column where the descriptions of a block's items start: the commonest column after a run
# of two or more spaces that follows an item's term.
function desc_column(first, last,    i, s, ind, rest, p, col, count, best, bestn) {
    delete count
    for (i = first; i <= last; i++) {
        s = L[i]
        ind = indent_of(s)
        if (ind < 1 || ind > 4)
            continue
        rest = substr(s, ind + 1)
        p = match(rest, /  +[^ ]/)
        if (!p)
            continue
        col = ind + p + RLENGTH - 1
        count[col]++
    }
    best = 0
    bestn = 0
    for (col in count)
        if (count[col] > bestn || (count[col] == bestn && col + 0 < best)) {
            best = col + 0
            bestn = count[col]
        }
    return best
}

function heading_name(s) {
    s = trim(s)
    sub(/:$/, "", s)
    if (s == "Exit status" || s == "Exit codes")
        return "EXIT STATUS"
    return toupper(s)
}

function block(first, last,    i, s, ind, col, term, desc, p, item_ind) {
    col = desc_column(first, last)
    item_ind = -1
    for (i = first; i <= last; i++) {
        s = L[i]
        ind = indent_of(s)
        if (ind == 0 && s ~ /^[A-Z][A-Za-z ]*:$/) {
            section(heading_name(s))
            item_ind = -1
            continue
        }
        if (ind == 0) {
            if (s ~ /^(Exit status|Exit codes):/) {
                section("EXIT STATUS")
                sub(/^(Exit status|Exit codes): */, "", s)
                if (s == "")
                    continue
            }
            if (item_ind >= 0)
                inpara = 0
            item_ind = -1
            para()
            print esc(s)
            continue
        }
        # An indented line: a new item when it is indented as items are and has a term before
        # the description column; otherwise more of what came before.
        if (ind <= 4 && (item_ind < 0 || ind <= item_ind) && col > ind + 1) {
            if (substr(s, col - 1, 1) == " " && substr(s, col, 1) != " ") {
                term = trim(substr(s, ind + 1, col - ind - 1))
                desc = substr(s, col)
            } else if ((p = match(substr(s, ind + 1), /  +/))) {
                term = substr(s, ind + 1, p - 1)
                desc = trim(substr(s, ind + p + RLENGTH))
            } else {
                term = trim(s)
                desc = ""
            }
            if (term != "") {
                print ".TP"
                print "\\fB" esc(term) "\\fR"
                if (desc != "")
                    print esc(trim(desc))
                item_ind = ind
                inpara = 1
                continue
            }
        }
        if (!inpara)
            para()
        print esc(trim(s))
    }
}

{ L[++n] = $0 }

END {
    print ".\\\" Generated from `" (page == "mprof" ? "mprof" : page) " --help` by tools/man/help2roff.awk; edit the help text, not this page."
    print ".TH " toupper(page) " 1 \"\" \"mprof " version "\" \"mprof manual\""
    print ".nh"
    print ".ad l"
    print ".SH NAME"
    print esc(page) " \\- " esc(ENVIRON["MAN_TITLE"])
    print ".SH SYNOPSIS"
    print ".nf"
    i = 1
    while (i <= n && (i == 1 ? L[i] ~ /^usage: / : (L[i] != "" && indent_of(L[i]) > 0))) {
        s = trim(L[i])
        sub(/^usage: /, "", s)
        print esc(s)
        i++
    }
    print ".fi"
    cur = ""
    section("DESCRIPTION")
    if (ENVIRON["MAN_DESCRIPTION"] != "") {
        para()
        print esc(ENVIRON["MAN_DESCRIPTION"])
    }
    while (i <= n) {
        while (i <= n && L[i] == "")
            i++
        if (i > n)
            break
        first = i
        while (i <= n && L[i] != "")
            i++
        inpara = 0
        # Prose after a list of items is not more of the list: it goes under NOTES.
        if (indent_of(L[first]) == 0 && L[first] !~ /^[A-Z][A-Za-z ]*:$/ &&
            L[first] !~ /^(Exit status|Exit codes):/ && cur != "DESCRIPTION" && cur != "EXIT STATUS")
            section("NOTES")
        block(first, i - 1)
    }
    if (extra != "") {
        while ((getline line < extra) > 0)
            print line
        close(extra)
    }
    if (ENVIRON["MAN_SEE_ALSO"] != "") {
        print ".SH SEE ALSO"
        print ENVIRON["MAN_SEE_ALSO"]
    }
}
