#!/usr/bin/perl
# tern-rte.pl: tern's Perl run-time engine. A CGIplus script (see
# docs/cgiplus.md) that keeps one Perl interpreter alive and runs unmodified
# CGI scripts in it, request after request: the script named by each
# request's SCRIPT_FILENAME, compiled once and compiled again when its file
# changes.
#
# Per request the script gets: %ENV set to exactly the request's variables
# (plus the engine's own environment, less CGIPLUS*), STDIN reading the
# request body, STDOUT writing the response, its own directory as the working
# directory, $0 set to its file. `exit` ends the script, not the engine; so
# does `die`, which also logs the error on stderr and, when the script wrote
# nothing yet, answers `Status: 500`.
#
# How a script is kept: its source is wrapped as
#     package TernRTE::S<n>; sub { #line 1 "file" ...source... }
# and compiled with a string eval, the way ModPerl::Registry does. What that
# means for a script: file-scoped `my` variables are fresh each request, but
# a named sub that uses one sees only the first request's copy ("will not stay
# shared"); globals (`our`, package variables) keep their values between
# requests; modules it `use`s are loaded once. Text after __END__ or __DATA__
# is readable from DATA on every request. `#!perl -w` turns warnings on.

# Compiles a wrapped script. Defined first, before `use strict` and before
# any of the engine's lexical variables, so that the string eval sees none of
# them.
sub TernRTE::compile { eval $_[0] }

use strict;
use warnings;

use File::Basename ();
use Symbol ();
use Time::HiRes ();

BEGIN {
    # A script's `exit` must end the script, not the engine: it dies with a
    # marker the engine recognizes. (A script that catches every die with its
    # own `eval` catches this too, as under ModPerl::Registry.)
    *CORE::GLOBAL::exit = sub (;$) {
        die bless { status => (@_ ? $_[0] : 0) }, 'TernRTE::Exit';
    };
}

my $EOF = $ENV{CGIPLUSEOF};
if (!defined $EOF || $EOF eq '') {
    print STDERR "tern-rte.pl: CGIPLUSEOF is not set: run me as a CGIplus script under tern\n";
    CORE::exit(2);
}
my ($ESC, $EOT) = @ENV{qw(CGIPLUSESC CGIPLUSEOT)};

# The engine's own environment, which every request's starts from. Without
# CGIPLUS*: a script that saw CGIPLUSEOF would think it ran under CGIplus itself.
my %BASE = %ENV;
delete @BASE{qw(CGIPLUSEOF CGIPLUSESC CGIPLUSEOT)};

# Requests arrive on fd 0: read them through a handle of the engine's own
# (close-on-exec), and give fd 0 /dev/null, so that a program a script starts
# cannot eat the next request.
open(my $IN, '<&', \*STDIN) or die "tern-rte.pl: dup stdin: $!\n";
binmode $IN;
open(STDIN, '<', '/dev/null') or die "tern-rte.pl: /dev/null: $!\n";
# Responses leave on fd 1, which a program a script starts inherits: its
# output is part of the response (Perl flushes every handle before it forks).
open(my $OUT, '>&=', 1) or die "tern-rte.pl: stdout: $!\n";
binmode $OUT;

# Struct mode: each request's variables in one read, no line parsing. It
# applies from the next request tern starts; the start line says which form
# comes, so the engine reads both.
if (defined $ESC && defined $EOT) {
    print $OUT $ESC, '!CGIPLUS: struct', $EOT;
    $OUT->flush;
}

my %scripts;    # file => { key, code, package, data }
my $serial = 0;
my $ENGINE = $$;

while (my $vars = read_request()) {
    my $body = read_exactly($vars->{CONTENT_LENGTH} || 0);
    last unless defined $body;
    serve($vars, \$body);
    # Whatever the script did to the layers, the sentinel goes out as bytes.
    binmode $OUT;
    print $OUT $EOF;
    $OUT->flush or CORE::exit(0);    # tern is gone
}
CORE::exit(0);

# The next request's variables, or undef at the end of input.
sub read_request {
    my $start = <$IN>;
    return undef unless defined $start;
    chomp $start;
    my %vars;
    if ($start eq '!') {
        while (1) {
            my $line = <$IN>;
            return undef unless defined $line;
            chomp $line;
            last if $line eq '';
            my ($name, $value) = split /=/, $line, 2;
            $vars{$name} = defined $value ? $value : '';
        }
    } elsif ($start =~ /\A!!(\d+)\z/) {
        my $block = read_exactly($1);
        return undef unless defined $block;
        for my $item (unpack '(V/a*)*', $block) {
            next if $item eq '';    # the terminating zero
            my ($name, $value) = split /=/, $item, 2;
            $vars{$name} = defined $value ? $value : '';
        }
    } else {
        print STDERR "tern-rte.pl: not a CGIplus start line: $start\n";
        CORE::exit(1);
    }
    return \%vars;
}

# Exactly $n bytes from the request pipe, or undef at the end of input.
sub read_exactly {
    my ($n) = @_;
    my $buf = '';
    while (length($buf) < $n) {
        my $got = read($IN, $buf, $n - length($buf), length($buf));
        return undef unless $got;
    }
    return $buf;
}

# Runs one script for one request, its output going to the response.
sub serve {
    my ($vars, $body) = @_;
    %ENV = (%BASE, %$vars);
    my $file = $vars->{SCRIPT_FILENAME};
    my ($script, $why) = load($file);
    if (!$script) {
        print STDERR "tern-rte.pl: $why\n" if $why;
        print $OUT $why
            ? "Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\nInternal Server Error\n"
            : "Status: 404 Not Found\r\nContent-Type: text/plain\r\n\r\nNot Found\n";
        return;
    }
    my $dir = File::Basename::dirname($file);
    chdir $dir or print STDERR "tern-rte.pl: chdir $dir: $!\n";

    my ($ok, $err, $wrote);
    {
        # The script's STDIN, STDOUT and globals for this request only; the
        # engine's come back when the block ends.
        local *STDIN;
        local *STDOUT;
        local ($/, $,, $\, $0, @ARGV) = ("\n", undef, undef, $file);
        local $SIG{__DIE__};
        local $SIG{__WARN__};
        tie *STDIN, 'TernRTE::In', $body;
        my $sink = tie *STDOUT, 'TernRTE::Out', $OUT;
        my $selected = select(STDOUT);
        if (defined $script->{data}) {
            no strict 'refs';
            open(*{"$script->{package}::DATA"}, '<', \$script->{data});
        }
        $ok = eval { $script->{code}->(); 1 };
        $err = $@;
        # A child the script forked that came back here (by `exit`, `die`
        # or the end of the script) must not go on serving requests.
        CORE::exit(0) if $$ != $ENGINE;
        select($selected);
        $wrote = $sink->{bytes};
        undef $sink;
    }
    $OUT->flush;
    return if $ok || ref $err eq 'TernRTE::Exit';
    print STDERR "tern-rte.pl: $file: $err";
    print STDERR "\n" unless $err =~ /\n\z/;
    if (!$wrote) {
        print $OUT "Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\nInternal Server Error\n";
    }
}

# The compiled script for $file: (script) when it runs, (undef, undef) when
# there is no such file, (undef, reason) when it does not compile. Compiled
# again when the file's identity, size or modification time changes.
sub load {
    my ($file) = @_;
    return (undef, undef) unless defined $file && length $file;
    my @st = Time::HiRes::stat($file);
    return (undef, undef) unless @st && -f _;
    my $key = join ':', @st[0, 1, 7, 9];
    my $known = $scripts{$file};
    return ($known) if $known && $known->{key} eq $key;

    open(my $fh, '<:raw', $file) or return (undef, "$file: $!");
    my $src = do { local $/; <$fh> };
    close $fh;
    my $data;
    if ($src =~ s/^__(?:END|DATA)__[ \t\r]*(?:\n(.*))?\z//ms) {
        $data = defined $1 ? $1 : '';
    }
    my $package = 'TernRTE::S' . ++$serial;
    my $warnings = $src =~ /\A#![^\n]*perl[^\n]*[ \t]-[A-Za-z]*w/ ? 'use warnings;' : 'no warnings;';
    (my $name = $file) =~ tr/"\n//d;
    my $code = TernRTE::compile(
        "package $package; no strict; $warnings sub {\n#line 1 \"$name\"\n$src\n;}");
    return (undef, "$file: $@") unless ref $code eq 'CODE';
    Symbol::delete_package($known->{package}) if $known;
    return ($scripts{$file} = { key => $key, code => $code, package => $package, data => $data });
}

# STDIN during a request: the body, from memory. A tie rather than an
# in-memory handle so that `sysread STDIN` works too.
package TernRTE::In;

sub TIEHANDLE {
    my ($class, $body) = @_;
    open(my $fh, '<', $body) or die "tern-rte.pl: body: $!\n";
    binmode $fh;
    return bless { fh => $fh }, $class;
}
sub READ     { my $s = shift; my $buf = \$_[0]; read($s->{fh}, $$buf, $_[1], $_[2] || 0) }
sub READLINE { my $fh = $_[0]{fh}; wantarray ? <$fh> : scalar <$fh> }
sub GETC     { getc $_[0]{fh} }
sub EOF      { eof $_[0]{fh} }
sub SEEK     { seek $_[0]{fh}, $_[1], $_[2] }
sub TELL     { tell $_[0]{fh} }
sub BINMODE  { my $s = shift; @_ ? binmode($s->{fh}, $_[0]) : binmode($s->{fh}) }
sub FILENO   { -1 }
sub CLOSE    { close $_[0]{fh} }

# STDOUT during a request: the response pipe, counting what the script wrote
# (an error after output started cannot become a 500 any more).
package TernRTE::Out;

sub TIEHANDLE { my ($class, $fh) = @_; bless { fh => $fh, bytes => 0 }, $class }

sub out {
    my ($s, $text) = @_;
    $s->{bytes} += length $text;
    local ($,, $\);
    my $ok = print { $s->{fh} } $text;
    # $| is the selected handle's: the script's STDOUT.
    $s->{fh}->flush if $|;
    return $ok;
}
sub PRINT {
    my $s = shift;
    my $text = join defined $, ? $, : '', @_;
    $text .= $\ if defined $\;
    return $s->out($text);
}
sub PRINTF { my $s = shift; my $fmt = shift; $s->out(sprintf $fmt, @_) }
sub WRITE {
    my ($s, $buf, $len, $off) = @_;
    $off = 0 unless defined $off;
    $len = length($buf) - $off unless defined $len;
    my $text = substr $buf, $off, $len;
    return $s->out($text) ? length $text : undef;
}
sub BINMODE { my $s = shift; @_ ? binmode($s->{fh}, $_[0]) : binmode($s->{fh}) }
sub FILENO  { fileno $_[0]{fh} }
# Closing STDOUT ends nothing: the engine ends the response with the sentinel.
sub CLOSE   { $_[0]{fh}->flush; 1 }
sub EOF     { 1 }
