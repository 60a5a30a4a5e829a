#!/usr/bin/perl
# A CGI script in Perl: a form, and its POSTed body read from stdin
# (exactly CONTENT_LENGTH bytes; tern spools chunked uploads to make it exact).
use strict;
use warnings;

sub unescape {
    my $s = shift;
    $s =~ tr/+/ /;
    $s =~ s/%([0-9A-Fa-f]{2})/chr(hex($1))/ge;
    return $s;
}

sub html {
    my $s = shift;
    $s =~ s/&/&amp;/g;
    $s =~ s/</&lt;/g;
    $s =~ s/>/&gt;/g;
    $s =~ s/"/&quot;/g;
    return $s;
}

my $said = '';
if (($ENV{REQUEST_METHOD} || '') eq 'POST') {
    my $body = '';
    read(STDIN, $body, $ENV{CONTENT_LENGTH} || 0);
    my %f = map { my ($k, $v) = split /=/, $_, 2; (unescape($k), unescape($v // '')) } split /&/, $body;
    $said = '<p>You said: <b>' . html($f{words} // '') . '</b> (' . length($body) . " bytes on stdin)</p>\n";
}

print "Content-Type: text/html; charset=utf-8\n\n";
print <<"PAGE";
<!doctype html>
<title>tern: a Perl CGI form</title>
<link rel="stylesheet" href="/style.css">
<main>
<h1>A Perl CGI form</h1>
$said<form method="post" action="@{[html($ENV{SCRIPT_NAME} // "")]}">
<input name="words" placeholder="say something"> <button>send</button>
</form>
<p><a href="/">back</a></p>
</main>
PAGE
