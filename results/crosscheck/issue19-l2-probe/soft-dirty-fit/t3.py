import time, sim, sys
C=60<<20
t1=float(sys.argv[1]); p=float(sys.argv[2]); trig=sys.argv[3] if len(sys.argv)>3 else 'write'
pol=sim.Policy('s', cap=0.455, victim='sample', q=0.25, t1=t1, p=p, trigger=trig)
meas={('all',22.5):(0.012,0.011,0.0),('all',25.2):(0.137,0.057,0.02),('all',27):(0.175,0.071,0.028),('all',28.8):(0.40,0.138,0.077),('all',30):(0.499,0.172,0.096),
('one',22.5):(0.015,0.0065,0),('one',25.2):(0.19,0.048,0.02),('one',27):(0.238,0.059,0.025),('one',28.8):(0.49,0.11,0.067),('one',30):(0.64,0.131,0.086)}
for ev in [True, False]:
  for mib in [22.5,25.2,27,28.8,30]:
    m=sim.run_row(C, mib, ev, 'm', pol, ways=16, assoc='full')
    v=sim.run_row(C, mib, ev, 'v', pol, ways=16, assoc='full')
    w=sim.run_row(C, mib, ev, 'w', pol, ways=16, assoc='full')
    k=('all' if ev else 'one',mib)
    print(k, 'm %.3f (%.3f)  v %.3f (%.3f)  w-spill %.3f (%.3f)'%(m[1],meas[k][0],v[1],meas[k][1],1-w[1],meas[k][2]), flush=True)
