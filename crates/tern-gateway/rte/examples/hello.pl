#!/usr/bin/perl
# Hello! as a plain CGI script and as a CGIplus script: the same file serves
# both. Under CGIplus (CGIPLUSEOF set) it asks for struct mode once, then
# loops: reads a request (either form: the start line says which), writes
# the response, then the sentinel. See docs/cgiplus.md.
use strict;
use warnings;

sub hello { print "Content-Type: text/plain\n\nHello!\n" }

my $eof = $ENV{CGIPLUSEOF};
if (!defined $eof) {
    hello();
    exit 0;
}
binmode STDIN;
binmode STDOUT;
print $ENV{CGIPLUSESC}, '!CGIPLUS: struct', $ENV{CGIPLUSEOT};
STDOUT->flush;

sub take {
    my ($n) = @_;
    my $buf = '';
    while (length $buf < $n) {
        read(STDIN, $buf, $n - length $buf, length $buf) or exit 0;
    }
    return $buf;
}

while (defined(my $start = <STDIN>)) {
    chomp $start;
    my %req;
    if ($start eq '!') {
        while (defined(my $line = <STDIN>)) {
            chomp $line;
            last if $line eq '';
            my ($name, $value) = split /=/, $line, 2;
            $req{$name} = $value;
        }
    } elsif ($start =~ /^!!(\d+)$/) {
        for (unpack '(V/a*)*', take($1)) {
            my ($name, $value) = split /=/, $_, 2;
            $req{$name} = $value if length;
        }
    } else {
        die "hello.pl: not a CGIplus start line: $start\n";
    }
    take($req{CONTENT_LENGTH} || 0);
    hello();
    print $eof;
    # The response and the sentinel in one write.
    STDOUT->flush;
}
