#!/usr/bin/perl
# One script, two ways to run: as plain CGI (a process per request) and
# under CGIplus (started once, looping over requests). Under CGIplus tern
# sets CGIPLUSEOF; each request then arrives on stdin as a line "!", then
# NAME=value lines, an empty line, and CONTENT_LENGTH bytes of body. The
# response is an ordinary CGI response, ended by the sentinel on a line of
# its own. See docs/cgiplus.md.
use strict;
use warnings;

$| = 1;
my $served = 0;

sub respond {
    my (%var) = @_;
    $served++;
    my $mode = defined $ENV{CGIPLUSEOF} ? "CGIplus" : "CGI";
    print "Content-Type: text/plain; charset=utf-8\n\n";
    print "Hello from a Perl script under $mode: process $$, request $served in this process.\n";
    print "SCRIPT_NAME=", ($var{SCRIPT_NAME} // ""), "\n";
    print "QUERY_STRING=", ($var{QUERY_STRING} // ""), "\n";
}

my $eof = $ENV{CGIPLUSEOF};
unless (defined $eof) {
    respond(%ENV);
    exit 0;
}
while (1) {
    my $line;
    do {
        $line = <STDIN>;
        exit 0 unless defined $line;
    } until $line eq "!\n";
    my %var;
    while (defined($line = <STDIN>) && $line ne "\n") {
        chomp $line;
        my ($name, $value) = split /=/, $line, 2;
        $var{$name} = $value;
    }
    my $body = "";
    read(STDIN, $body, $var{CONTENT_LENGTH}) if $var{CONTENT_LENGTH};
    respond(%var);
    print "$eof\n";
}
