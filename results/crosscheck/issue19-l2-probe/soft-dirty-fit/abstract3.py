from abstract import run
c=20000
print('sample k: m / v')
for q in [0.1,0.15,0.2,0.25,0.3]:
    ms=[];vs=[]
    for xc in [1.055,1.1,1.21,1.37,1.65]:
        S=int(c*xc)
        ms.append(round(run(S,c,'sample',k=int(q*c))[-1],3)); vs.append(round(run(S,c,'sample',k=int(q*c),rev=True)[-1],3))
    print(q, ms, vs)
print('meas m-all [0.40,0.50,0.753,0.894,0.976] m-one [0.49,0.64,0.97,..]')
print('meas v-all [0.138,0.172,0.249,0.356,0.470] v-one [0.11,0.131,0.208,0.303,0.42]')
