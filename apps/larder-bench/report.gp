# report.gp: the report's plot (report.sh). Variables: datafile (report.dat: one block per mode,
# columns epoch, samples/s, AU %, PFS MiB), outfile, title, and from report.vars modes (block
# names) and threshold (AU %). Three panels: throughput, AU, bytes read from the file system.
set terminal pngcairo size 1100,1050 font "sans,11" noenhanced
set output outfile
set multiplot layout 3,1 title title
set lmargin at screen 0.09
set rmargin at screen 0.80
set key outside right top
set grid
set xtics 1
set xlabel "epoch"
n = words(modes)
stats datafile index 0 using 1 nooutput
set xrange [0.5:STATS_max + 0.5]

set ylabel "throughput (samples/s)"
set yrange [0:*]
plot for [i=1:n] datafile index (i-1) using 1:2 with linespoints lw 2 pt 7 title word(modes, i)

set ylabel "accelerator utilization (%)"
set yrange [0:105]
plot for [i=1:n] datafile index (i-1) using 1:3 with linespoints lw 2 pt 7 title word(modes, i), \
     threshold with lines dt 2 lc rgb "black" title sprintf("AU threshold %g%%", threshold)

set ylabel "read from the file system (MiB)"
set yrange [0:*]
set style fill solid 0.6
w = 0.8 / n
plot for [i=1:n] datafile index (i-1) using ($1 - 0.4 + w * (i - 0.5)):4:(w) with boxes \
     title word(modes, i)
unset multiplot
