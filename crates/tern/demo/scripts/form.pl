# A form handled by an ordinary CGI script, run by tern's Perl engine: the
# body is on STDIN, as under CGI.
my $body = "";
read(STDIN, $body, $ENV{CONTENT_LENGTH} || 0);
my %f;
for (split /&/, $body) {
    my ($k, $v) = split /=/, $_, 2;
    next unless defined $k;
    for ($k, $v) { next unless defined; tr/+/ /; s/%([0-9A-Fa-f]{2})/chr(hex($1))/ge; }
    $f{$k} = $v;
}
my $name = $f{name} // "";
$name =~ s/&/&amp;/g; $name =~ s/</&lt;/g; $name =~ s/>/&gt;/g; $name =~ s/"/&quot;/g;
print "Content-Type: text/html; charset=utf-8\n\n";
print "<!doctype html><title>Perl engine form</title>\n";
print "<p>Hello, $name!</p>\n" if $name ne "";
print qq{<form method="post"><input name="name" placeholder="your name"> <button>Send</button></form>\n};
print "<p>Served by process $$ (the engine stays loaded).</p>\n";
