# face2face.pl, the WASD report's persistent-Perl test script: an
# ordinary CGI script. Here it runs in tern's Perl engine, which keeps one
# interpreter loaded and runs it request after request.
print "Content-Type:  text/html\n\n
<B>Hello!</B>
";
