#!/usr/bin/perl
# Hello! as a plain CGI script and as a CGIplus script: the same file serves
# both. Under CGIplus (CGIPLUSEOF is set) it asks for struct mode once, then
# loops: it reads a request in either form (the start line says which),
# writes the response, then the sentinel.
use strict;
use warnings;

sub respond {
    my ($env) = @_;
    print "Content-Type: text/plain\n\nHello!\n";
}

my $eof = $ENV{CGIPLUSEOF};
if (!defined $eof) {    # plain CGI
    respond(\%ENV);
    exit 0;
}
binmode STDIN;
binmode STDOUT;
print $ENV{CGIPLUSESC}, '!CGIPLUS: struct', $ENV{CGIPLUSEOT};
STDOUT->flush;

# Exactly $n bytes of stdin; exits when tern closed it.
sub take {
    my ($n) = @_;
    my $buf = '';
    while (length $buf < $n) {
        read(STDIN, $buf, $n - length $buf, length $buf) or exit 0;
    }
    return $buf;
}

# The next request's variables and body; exits when tern closed stdin (the
# worker is being stopped).
sub read_request {
    my $start = <STDIN>;
    exit 0 unless defined $start;
    chomp $start;
    my %env;
    if ($start eq '!') {    # record mode: NAME=value lines up to an empty one
        while (1) {
            my $line = <STDIN>;
            exit 0 unless defined $line;
            chomp $line;
            last if $line eq '';
            my ($name, $value) = split /=/, $line, 2;
            $env{$name} = $value;
        }
    } elsif ($start =~ /^!!(\d+)$/) {    # struct mode: u32 little-endian lengths
        for my $item (unpack '(V/a*)*', take($1)) {
            next if $item eq '';    # the terminating zero
            my ($name, $value) = split /=/, $item, 2;
            $env{$name} = $value;
        }
    } else {
        die "hello.pl: not a CGIplus start line: $start\n";
    }
    my $body = take($env{CONTENT_LENGTH} || 0);
    return (\%env, $body);
}

while (1) {
    my ($env, $body) = read_request();
    respond($env);
    print $eof;
    STDOUT->flush;    # the response and the sentinel in one write
}
